import { createHash } from 'node:crypto';
import { canonicalJson } from '../canonical-json';
import type { AuditEntry, AuditEvent } from './audit-event';

export const GENESIS_HASH = '0'.repeat(64);

export interface ChainHead {
  seq: number;
  hash: string;
}

/** The fields a hash covers: everything a reader sees except the hash itself. */
function canonicalBody(event: AuditEvent, seq: number, prevHash: string): string {
  const body = {
    id: event.id,
    org_id: event.orgId,
    seq,
    at: event.at.toISOString(),
    actor: event.actor,
    action: event.action,
    resource: event.resource,
    outcome: event.outcome,
    details: event.details,
    request_id: event.requestId,
    prev_hash: prevHash,
  };
  return canonicalJson(body);
}

/** hash = SHA-256 over the canonical JSON (RFC 8785) of the entry, prev_hash included. */
export const hashEntry = (event: AuditEvent, seq: number, prevHash: string): string =>
  createHash('sha256')
    .update(canonicalBody(event, seq, prevHash))
    .digest('hex');

/** Appends events to a chain: gapless seq, each linked to the one before. */
export function sealEvents(head: ChainHead, events: readonly AuditEvent[]): AuditEntry[] {
  let { seq, hash } = head;
  return events.map((event) => {
    const prevHash = hash;
    seq += 1;
    hash = hashEntry(event, seq, prevHash);
    return { ...event, seq, prevHash, hash };
  });
}

/** Why verify failed at `firstBrokenSeq` (kept in logs and tests; the HTTP answer's shape is fixed). */
export type BreakReason =
  | 'entry_mismatch' // a gap in seq, a prev_hash that is not the previous hash, or a changed entry
  | 'checkpoint_mismatch' // the chain does not pass through a signed head
  | 'bad_signature' // a checkpoint or signed head whose signature does not match
  | 'unknown_key_id' // signed (it says) by a key we do not hold: a relabel is not a skip
  | 'truncated' // a signed head lies past the chain's last entry
  | 'diverged' // entries were sealed after a chain that no longer passed through the signed head
  | 'unsigned_head'; // the chain's last entry carries no signed checkpoint

export interface VerifyResult {
  valid: boolean;
  entriesChecked: number;
  /** The last entry checked: seq 0 and the genesis hash for an empty log. */
  head: ChainHead;
  firstBrokenSeq: number | null;
  reason: BreakReason | null;
}

/**
 * Walks a chain in seq order, in as many batches as the caller likes, and remembers the first
 * entry that breaks it: a gap in seq, a prev_hash that is not the previous hash, or a hash that
 * does not match the entry's content.
 */
export class ChainVerifier {
  private expected: ChainHead = { seq: 0, hash: GENESIS_HASH };
  /** The newest signed head the chain passed through: what comes before it is proven. */
  private lastAnchored = 0;
  private checked = 0;
  private firstBroken: { seq: number; reason: BreakReason } | null = null;

  /**
   * `anchors`: seq -> hash of trusted (signed) heads the chain must pass through.
   * `signedHead`: the last entry must be one of them (the sealer signs every head it writes).
   */
  constructor(
    private readonly anchors: ReadonlyMap<number, string> = new Map(),
    private readonly options: { signedHead?: boolean } = {},
  ) {}

  push(entry: AuditEntry): void {
    this.checked += 1;
    const linked =
      entry.seq === this.expected.seq + 1 &&
      entry.prevHash === this.expected.hash &&
      entry.hash === hashEntry(entry, entry.seq, entry.prevHash);
    const anchor = this.anchors.get(entry.seq);
    if (!linked) this.markBroken(entry.seq, 'entry_mismatch');
    // A rewrite with recomputed hashes shows only at the next signed head, but it may have begun
    // anywhere after the last one the chain passed: that is the first entry verify cannot vouch for.
    else if (anchor !== undefined && anchor !== entry.hash)
      this.markBroken(this.lastAnchored + 1, 'checkpoint_mismatch');
    else if (anchor !== undefined) this.lastAnchored = entry.seq;
    this.expected = { seq: entry.seq, hash: entry.hash };
  }

  /** Keeps the earliest break; on a tie, the first reason found. */
  markBroken(seq: number, reason: BreakReason): void {
    if (this.firstBroken === null || seq < this.firstBroken.seq) this.firstBroken = { seq, reason };
  }

  result(): VerifyResult {
    const { seq } = this.expected;
    // Entries cut from the end leave the last one standing unsigned: the cut is what to report.
    if ([...this.anchors.keys()].some((s) => s > seq)) this.markBroken(seq + 1, 'truncated');
    else if (this.options.signedHead && seq > 0 && !this.anchors.has(seq))
      this.markBroken(seq, 'unsigned_head');
    return {
      valid: this.firstBroken === null,
      entriesChecked: this.checked,
      head: this.expected,
      firstBrokenSeq: this.firstBroken?.seq ?? null,
      reason: this.firstBroken?.reason ?? null,
    };
  }
}
