import type { AppliesTo, Policy, PolicyMode, Rule } from '../../domain/policy/policy';

/** A `policies` row as PostgreSQL hands it back (jsonb parsed, timestamps as Date). */
export interface PolicyRow {
  id: string;
  org_id: string;
  name: string;
  description: string | null;
  enabled: boolean;
  priority: number;
  mode: PolicyMode;
  applies_to: AppliesTo;
  rules: Rule[];
  version: number;
  created_at: Date | string;
  updated_at: Date | string;
}

export const POLICY_COLUMNS =
  'id, org_id, name, description, enabled, priority, mode, applies_to, rules, version, created_at, updated_at';

/** Rules and applies_to are stored in the domain's shape; the API's snake_case lives in its presenter. */
export const toPolicy = (row: PolicyRow): Policy => ({
  id: row.id,
  orgId: row.org_id,
  name: row.name,
  description: row.description,
  enabled: row.enabled,
  priority: Number(row.priority),
  mode: row.mode,
  appliesTo: row.applies_to,
  rules: row.rules,
  version: Number(row.version),
  createdAt: new Date(row.created_at),
  updatedAt: new Date(row.updated_at),
});

/** Values for the client fields and bookkeeping, in the order INSERT and UPDATE name them. */
export const policyValues = (p: Policy) => [
  p.name,
  p.description,
  p.enabled,
  p.priority,
  p.mode,
  JSON.stringify(p.appliesTo),
  JSON.stringify(p.rules),
  p.version,
  p.updatedAt,
];
