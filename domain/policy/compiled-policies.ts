import type { Clock } from '../clock';
import type { PolicySet } from './policy';

/** Where an org's policies are read from: its current version cheaply, the whole set consistently. */
export interface PolicySetReader {
  policyVersion(orgId: string): Promise<number>;
  /** The org's policies and the policy_version they are, read in one consistent snapshot. */
  loadPolicySet(orgId: string): Promise<PolicySet>;
}

/** How long a process trusts the version it last read: a change is seen everywhere within it. */
export const VERSION_CHECK_MS = 1000;

interface Entry<C> {
  version: number;
  compiled: C;
  checkedAt: number;
  /** What the compiled set weighs (`weigh`): what it counts against the cache's budget. */
  weight: number;
}

/** How much a cache may keep, by the weight of its sets; the one used longest ago goes first. */
export interface CacheBudget<C> {
  weigh(compiled: C): number;
  budget: number;
}

/**
 * Each org's compiled policy set, keyed by policy_version: patterns are compiled once per version,
 * not per request, and an evaluation always uses one whole version. The version is read again
 * at most once a second per org (as key revocation is), so every process enforces a change
 * within about a second. A caller that already knows the current version (the guardian stage
 * reads it with the invocation) skips the check.
 */
export class CompiledPolicies<C> {
  /** By org, the one used longest ago first (a Map keeps insertion order; a use moves it last). */
  private readonly entries = new Map<string, Entry<C>>();
  private readonly loading = new Map<string, Promise<Entry<C>>>();
  private weight = 0;

  /**
   * `limit`: without one, every org's set is kept for good, and memory grew with every org that
   * evaluated once (QA: about 13 MB a set at the org's pattern limit, 300 such orgs past the heap).
   */
  constructor(
    private readonly reader: PolicySetReader,
    /** May compile in turns (compilePoliciesInTurns): the set is used once it is whole. */
    private readonly compile: (set: PolicySet) => C | Promise<C>,
    private readonly clock: Clock,
    private readonly limit: CacheBudget<C> | null = null,
  ) {}

  async forOrg(orgId: string, knownVersion?: number): Promise<{ version: number; compiled: C }> {
    const now = this.clock.now().getTime();
    const entry = this.entries.get(orgId);
    if (entry) this.touch(orgId, entry);
    if (entry && knownVersion === entry.version) return entry;
    if (entry && knownVersion === undefined && now - entry.checkedAt < VERSION_CHECK_MS) return entry;
    const version = knownVersion ?? (await this.reader.policyVersion(orgId));
    if (entry && entry.version === version) {
      entry.checkedAt = now;
      return entry;
    }
    const loaded = await this.load(orgId);
    // A load already under way when the caller learnt of `version` may have read an older one.
    return loaded.version < version ? this.load(orgId) : loaded;
  }

  /** The sets kept, and what they weigh together. */
  get kept(): { sets: number; weight: number } {
    return { sets: this.entries.size, weight: this.weight };
  }

  private touch(orgId: string, entry: Entry<C>): void {
    if (!this.limit) return;
    this.entries.delete(orgId);
    this.entries.set(orgId, entry);
  }

  private keep(orgId: string, entry: Entry<C>): void {
    const old = this.entries.get(orgId);
    if (old) this.weight -= old.weight;
    this.entries.delete(orgId);
    this.entries.set(orgId, entry);
    this.weight += entry.weight;
    if (!this.limit) return;
    // The set just kept stays, whatever it weighs: it is the one in use.
    for (const [id, oldest] of this.entries) {
      if (this.weight <= this.limit.budget || id === orgId) break;
      this.entries.delete(id);
      this.weight -= oldest.weight;
    }
  }

  /** One load per org at a time: a burst after a change compiles the new version once. */
  private load(orgId: string): Promise<Entry<C>> {
    const pending = this.loading.get(orgId);
    if (pending) return pending;
    const load = this.reader
      .loadPolicySet(orgId)
      .then(async (set) => {
        const compiled = await this.compile(set);
        const entry = {
          version: set.policyVersion,
          compiled,
          checkedAt: this.clock.now().getTime(),
          weight: this.limit?.weigh(compiled) ?? 0,
        };
        const current = this.entries.get(orgId);
        // A slower load of an older version never replaces a newer one.
        if (!current || current.version <= entry.version) this.keep(orgId, entry);
        return entry;
      })
      .finally(() => this.loading.delete(orgId));
    this.loading.set(orgId, load);
    return load;
  }
}
