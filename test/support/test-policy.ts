import type { Policy, Rule } from '../../domain/policy/policy';
import type { PolicyFields } from '../../domain/policy/policy-use-cases';

/** A policy's client fields (a create's body, a preview's draft), enabled and enforcing unless `over` says otherwise. */
export const testFields = (rules: Rule[], over: Partial<PolicyFields> = {}): PolicyFields => ({
  name: 'test policy',
  description: null,
  enabled: true,
  priority: 0,
  mode: 'enforce',
  appliesTo: {},
  rules,
  ...over,
});

/** A stored policy in the domain's shape, enabled and enforcing unless `over` says otherwise. */
export const testPolicy = (rules: Rule[], over: Partial<Policy> = {}): Policy => ({
  ...testFields(rules),
  id: 'pol_1',
  orgId: 'org_1',
  version: 1,
  createdAt: new Date(0),
  updatedAt: new Date(0),
  ...over,
});
