import type { Page, PageRequest } from '../model';
import type { Policy, Rule } from './policy';

/**
 * A policy's pattern instructions as stored with it; a policy written before they were kept has
 * none, and its rules are given to count them from. With the items of its lists (listItemsOf).
 */
export type StoredPatterns = { id: string; listItems: number } & (
  { instructions: number; rules?: never } | { instructions: null; rules: Rule[] }
);

/** The policies a page shows and the org's policy_version they are at. */
export interface PolicyPage extends Page<Policy> {
  policyVersion: number;
}

/**
 * The org's policies inside a unit of work. Writers take the org's policy_version first (a row
 * lock held until the transaction ends), so policy changes of one org run one at a time and
 * each gets its own version, with no gap.
 */
export interface PolicyRepository {
  /** Locks the org's policy_version without changing it and returns it. */
  lockVersion(orgId: string): Promise<number>;
  /** Adds 1 to the org's policy_version (locking it) and returns the new value. */
  bumpVersion(orgId: string): Promise<number>;
  /** A live policy (deleted ones are not found). */
  get(orgId: string, id: string): Promise<Policy | null>;
  /** A live policy, or null, and the org's policy_version, read in one statement. */
  getWithVersion(orgId: string, id: string): Promise<{ policy: Policy | null; policyVersion: number }>;
  /** A page of live policies and the org's policy_version, read in one statement. */
  list(orgId: string, page: PageRequest): Promise<PolicyPage>;
  countLive(orgId: string): Promise<number>;
  /** What the patterns of each of the org's enabled live policies compile to: what its compiled set holds. */
  enabledPatterns(orgId: string): Promise<StoredPatterns[]>;
  /** `patternInstructions`: what its patterns compile to, kept with it (enabledPatterns). */
  insert(policy: Policy, patternInstructions: number): Promise<void>;
  /** Writes every client field, version and updated_at of a live policy, and its patterns' count. */
  replace(policy: Policy, patternInstructions: number): Promise<void>;
  /** Deleted policies keep their row, so decisions naming them stay traceable. */
  markDeleted(orgId: string, id: string, at: Date): Promise<void>;
}
