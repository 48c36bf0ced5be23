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
}

/**
 * Each org's compiled policy set, keyed by policy_version: patterns are compiled once per version,
 * not per request, and an evaluation always uses one whole version. The version is read again
 * at most once a second per org (as key revocation is), so every process enforces a change
 * within about a second. A caller that already knows the current version (the guardian stage
 * reads it with the invocation) skips the check.
 */
export class CompiledPolicies<C> {
  private readonly entries = new Map<string, Entry<C>>();
  private readonly loading = new Map<string, Promise<Entry<C>>>();

  constructor(
    private readonly reader: PolicySetReader,
    private readonly compile: (set: PolicySet) => C,
    private readonly clock: Clock,
  ) {}

  async forOrg(orgId: string, knownVersion?: number): Promise<{ version: number; compiled: C }> {
    const now = this.clock.now().getTime();
    const entry = this.entries.get(orgId);
    if (entry && knownVersion === entry.version) return entry;
    if (entry && knownVersion === undefined && now - entry.checkedAt < VERSION_CHECK_MS) return entry;
    const version = knownVersion ?? (await this.reader.policyVersion(orgId));
    if (entry && entry.version === version) {
      entry.checkedAt = now;
      return entry;
    }
    return this.load(orgId);
  }

  /** One load per org at a time: a burst after a change compiles the new version once. */
  private load(orgId: string): Promise<Entry<C>> {
    const pending = this.loading.get(orgId);
    if (pending) return pending;
    const load = this.reader
      .loadPolicySet(orgId)
      .then((set) => {
        const entry = {
          version: set.policyVersion,
          compiled: this.compile(set),
          checkedAt: this.clock.now().getTime(),
        };
        const current = this.entries.get(orgId);
        // A slower load of an older version never replaces a newer one.
        if (!current || current.version <= entry.version) this.entries.set(orgId, entry);
        return entry;
      })
      .finally(() => this.loading.delete(orgId));
    this.loading.set(orgId, load);
    return load;
  }
}
