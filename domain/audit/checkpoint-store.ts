import type { Checkpoint } from './checkpoint';

/** A checkpoint and the same (org, seq, hash) signed again under another key. */
export interface Resigned {
  from: Checkpoint;
  to: Checkpoint;
}

/** Where signed heads are kept, as the master key rotation's re-signing sees them. */
export interface CheckpointStore {
  /** Up to `limit` database checkpoints not signed under `keyId`, in (org, seq) order after `after`. */
  signedUnderOtherKeys(
    keyId: string,
    after: { orgId: string; seq: number } | null,
    limit: number,
  ): Promise<Checkpoint[]>;
  /** Swaps key id and signature of each row that still carries `from`'s; returns how many it swapped. */
  replaceSignatures(changes: Resigned[]): Promise<number>;
  /** Orgs that have a chain, in id order after `after`. */
  orgsAfter(after: string, limit: number): Promise<string[]>;
  /** The newest signed head kept outside the database, as verify reads it. */
  signedHead(orgId: string): Promise<Checkpoint | null>;
  /** Swaps it only if it still is `from` (the sealer may have moved it on): false otherwise. */
  replaceSignedHead(change: Resigned): Promise<boolean>;
}
