import type { Policy, Rule } from '../../domain/policy/policy';

/** A stored policy in the domain's shape, enabled and enforcing unless `over` says otherwise. */
export const testPolicy = (rules: Rule[], over: Partial<Policy> = {}): Policy => ({
  id: 'pol_1',
  orgId: 'org_1',
  name: 'test policy',
  description: null,
  enabled: true,
  priority: 0,
  mode: 'enforce',
  appliesTo: {},
  rules,
  version: 1,
  createdAt: new Date(0),
  updatedAt: new Date(0),
  ...over,
});
