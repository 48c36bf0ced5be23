import type { Session, SessionStatus } from '../../domain/sessions/session';
import { toDate, toDateOrNull, type Num, type Time } from '../db/row-values';

export interface SessionRow {
  id: string;
  org_id: string;
  agent_id: string | null;
  status: string;
  max_cost_micros: Num;
  max_calls: Num | null;
  max_tokens: Num | null;
  cost_micros: Num;
  calls: Num;
  input_tokens: Num;
  output_tokens: Num;
  metadata: Record<string, unknown>;
  created_by: string;
  created_at: Time;
  expires_at: Time;
  closed_at: Time | null;
}

const numOrNull = (n: Num | null): number | null => (n === null ? null : Number(n));

export const toSession = (r: SessionRow): Session => ({
  id: r.id,
  orgId: r.org_id,
  agentId: r.agent_id,
  status: r.status as SessionStatus,
  limits: {
    maxCostMicros: Number(r.max_cost_micros),
    maxCalls: numOrNull(r.max_calls),
    maxTokens: numOrNull(r.max_tokens),
  },
  usage: {
    costMicros: Number(r.cost_micros),
    calls: Number(r.calls),
    inputTokens: Number(r.input_tokens),
    outputTokens: Number(r.output_tokens),
  },
  metadata: r.metadata,
  createdBy: r.created_by,
  createdAt: toDate(r.created_at),
  expiresAt: toDate(r.expires_at),
  closedAt: toDateOrNull(r.closed_at),
});
