import { compilePolicies, type CompiledPolicySet } from '../../domain/policy/compile-policies';
import type { PolicySet } from '../../domain/policy/policy';
import { BoundedMemo } from '../../domain/bounded-memo';

/**
 * Compiled sets the policy thread keeps, by org (and beside it, the org's last previewed draft:
 * slotOf). The orgs whose evaluations are heavy are few. A set is at most about 13 MB
 * (MAX_ORG_PATTERN_PROGRAM; `npm run bench:policy-memory`), so these fit the thread's heap with
 * room for the evaluation's own work (QA: 64 of the sets allowed before that limit ran the thread
 * out of memory, and one org's verdict then depended on which others' sets were kept).
 */
export const KEEP_SETS = 16;

/** A set with a variant (a preview's draft added) never takes the place of the org's stored set. */
const slotOf = (set: PolicySet): string => (set.variant === undefined ? set.orgId : `${set.orgId} draft`);

/** The sets last used, compiled once per policy_version (and variant); the one used longest ago goes first. */
export class ThreadSets {
  private readonly sets: BoundedMemo<CompiledPolicySet>;

  constructor(keep = KEEP_SETS) {
    this.sets = new BoundedMemo(keep);
  }

  compiledOf(set: PolicySet): CompiledPolicySet {
    const slot = slotOf(set);
    const kept = this.sets.get(slot);
    if (kept && kept.policyVersion === set.policyVersion && kept.variant === set.variant) return kept;
    const compiled = compilePolicies(set);
    this.sets.set(slot, compiled);
    return compiled;
  }

  get size(): number {
    return this.sets.size;
  }
}
