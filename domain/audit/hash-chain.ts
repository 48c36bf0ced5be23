import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
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
  return canonicalize(body) ?? '';
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

export interface VerifyResult {
  valid: boolean;
  entriesChecked: number;
  /** The last entry checked: seq 0 and the genesis hash for an empty log. */
  head: ChainHead;
  firstBrokenSeq: number | null;
}

/**
 * Walks a chain in seq order, in as many batches as the caller likes, and remembers the first
 * entry that breaks it: a gap in seq, a prev_hash that is not the previous hash, or a hash that
 * does not match the entry's content.
 */
export class ChainVerifier {
  private expected: ChainHead = { seq: 0, hash: GENESIS_HASH };
  private checked = 0;
  private firstBroken: number | null = null;

  /** `anchors`: seq -> hash of trusted (signed) checkpoints the chain must pass through. */
  constructor(private readonly anchors: ReadonlyMap<number, string> = new Map()) {}

  push(entry: AuditEntry): void {
    this.checked += 1;
    const anchor = this.anchors.get(entry.seq);
    const intact =
      entry.seq === this.expected.seq + 1 &&
      entry.prevHash === this.expected.hash &&
      entry.hash === hashEntry(entry, entry.seq, entry.prevHash) &&
      (anchor === undefined || anchor === entry.hash);
    if (!intact) this.markBroken(entry.seq);
    this.expected = { seq: entry.seq, hash: entry.hash };
  }

  /** A broken checkpoint signature, or entries missing past the end of the chain. */
  markBroken(seq: number): void {
    if (this.firstBroken === null || seq < this.firstBroken) this.firstBroken = seq;
  }

  result(): VerifyResult {
    const beyond = [...this.anchors.keys()].filter((seq) => seq > this.expected.seq);
    if (beyond.length > 0) this.markBroken(this.expected.seq + 1);
    return {
      valid: this.firstBroken === null,
      entriesChecked: this.checked,
      head: this.expected,
      firstBrokenSeq: this.firstBroken,
    };
  }
}
