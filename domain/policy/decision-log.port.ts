import type { AuditEvent } from '../audit/audit-event';
import type { Decision } from './decision';
import type { Verdict } from './verdict';

/** Filters of the decision log; they combine with AND. `since` is inclusive, `until` exclusive. */
export interface DecisionFilter {
  agentId?: string | undefined;
  sessionId?: string | undefined;
  verdict?: Verdict | undefined;
  /** A decision matches when one of its reasons or shadow reasons names the policy. */
  policyId?: string | undefined;
  since?: Date | undefined;
  until?: Date | undefined;
}

/** Where a page ends: the log is ordered by (evaluated_at, id), newest first. */
export interface DecisionPosition {
  at: Date;
  id: string;
}

export interface DecisionPage {
  items: Decision[];
  /** The position to continue after; null on the last page. */
  next: DecisionPosition | null;
}

/** Every guardian decision of an org, as OPA's decision logs: what was decided, why, on which version. */
export interface DecisionLog {
  list(
    orgId: string,
    filter: DecisionFilter,
    page: { limit: number; after: DecisionPosition | null },
  ): Promise<DecisionPage>;
  /** Null for an unknown id or another org's decision. */
  get(orgId: string, id: string): Promise<Decision | null>;
  /** Writes one decision and its audit entry in one transaction (both or neither). */
  record(decision: Decision, event: AuditEvent): Promise<void>;
}
