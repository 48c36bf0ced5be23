import type { AuditEntry, AuditEvent } from '../../domain/audit/audit-event';
import type { AuditLog } from '../../domain/audit/audit-log';
import { scrubDetails } from '../../domain/audit/audit-event';
import {
  checkpointKeyFrom,
  isAuthentic,
  signCheckpoint,
  type Checkpoint,
} from '../../domain/audit/checkpoint';
import { ChainVerifier, GENESIS_HASH, hashEntry, sealEvents } from '../../domain/audit/hash-chain';
import { verifyAudit } from '../../domain/audit/verify-audit';

const event = (n: number): AuditEvent => ({
  id: `aud_${n}`,
  orgId: 'org_1',
  at: new Date(Date.UTC(2026, 0, 1, 0, 0, n)),
  actor: { type: 'api_key', id: 'key_1' },
  action: 'key.created',
  resource: { type: 'api_key', id: `key_${n}` },
  outcome: 'success',
  details: { n, nested: { b: 1, a: 2 } },
  requestId: `req_${n}`,
});

const verify = (entries: ReturnType<typeof sealEvents>) => {
  const v = new ChainVerifier();
  entries.forEach((e) => v.push(e));
  return v.result();
};

describe('hash chain', () => {
  const chain = sealEvents({ seq: 0, hash: GENESIS_HASH }, [1, 2, 3, 4].map(event));

  it('links entries with gapless seq from the genesis hash', () => {
    expect(chain.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    expect(chain[0]?.prevHash).toBe(GENESIS_HASH);
    expect(chain[2]?.prevHash).toBe(chain[1]?.hash);
    expect(verify(chain)).toEqual({
      valid: true,
      entriesChecked: 4,
      head: { seq: 4, hash: chain[3]?.hash },
      firstBrokenSeq: null,
      reason: null,
    });
  });

  it('continues an existing chain from its head', () => {
    const more = sealEvents({ seq: 4, hash: chain[3]!.hash }, [event(5)]);
    expect(verify([...chain, ...more]).valid).toBe(true);
  });

  it('hashes canonical JSON: key order in details does not matter', () => {
    const e = event(1);
    const reordered = { ...e, details: { nested: { a: 2, b: 1 }, n: 1 } };
    expect(hashEntry(reordered, 1, GENESIS_HASH)).toBe(hashEntry(e, 1, GENESIS_HASH));
  });

  it.each([
    ['a changed field', (c: typeof chain) => [c[0]!, { ...c[1]!, action: 'key.revoked' }, c[2]!, c[3]!], 2],
    ['a removed entry', (c: typeof chain) => [c[0]!, c[2]!, c[3]!], 3],
    ['swapped entries', (c: typeof chain) => [c[0]!, c[2]!, c[1]!, c[3]!], 2],
    [
      'a recomputed hash without relinking',
      (c: typeof chain) => {
        const forged = { ...c[1]!, details: { forged: true } };
        return [c[0]!, { ...forged, hash: hashEntry(forged, 2, forged.prevHash) }, c[2]!, c[3]!];
      },
      3,
    ],
  ])('finds %s', (_name, tamper, brokenAt) => {
    expect(verify(tamper(chain))).toMatchObject({ valid: false, firstBrokenSeq: brokenAt });
  });
});

describe('checkpoints', () => {
  const key = checkpointKeyFrom(Buffer.alloc(32, 7));
  const chain = sealEvents({ seq: 0, hash: GENESIS_HASH }, [1, 2, 3].map(event));

  it('accepts its own signatures and refuses changed ones or another key', () => {
    const c = signCheckpoint(key, 'org_1', chain[2]!, new Date());
    expect(isAuthentic(key, c)).toBe(true);
    expect(isAuthentic(key, { ...c, hash: chain[1]!.hash })).toBe(false);
    expect(isAuthentic(checkpointKeyFrom(Buffer.alloc(32, 8)), c)).toBe(false);
  });

  it('makes a recomputed chain fail from the first entry after the last anchor it passed', () => {
    const rewritten = sealEvents({ seq: 0, hash: GENESIS_HASH }, [
      event(1),
      { ...event(2), action: 'x' },
      event(3),
    ]);
    const onlyLast = new ChainVerifier(new Map([[3, chain[2]!.hash]]));
    rewritten.forEach((e) => onlyLast.push(e));
    expect(onlyLast.result()).toMatchObject({
      valid: false,
      firstBrokenSeq: 1,
      reason: 'checkpoint_mismatch',
    });

    const both = new ChainVerifier(
      new Map([
        [1, chain[0]!.hash],
        [3, chain[2]!.hash],
      ]),
    );
    rewritten.forEach((e) => both.push(e));
    expect(both.result()).toMatchObject({ valid: false, firstBrokenSeq: 2, reason: 'checkpoint_mismatch' });
  });

  it('notices entries cut off after a checkpoint', () => {
    const v = new ChainVerifier(new Map([[3, chain[2]!.hash]]));
    chain.slice(0, 2).forEach((e) => v.push(e));
    expect(v.result()).toMatchObject({ valid: false, firstBrokenSeq: 3 });
  });
});

describe('verifyAudit', () => {
  const key = checkpointKeyFrom(Buffer.alloc(32, 7));
  const chain = sealEvents({ seq: 0, hash: GENESIS_HASH }, [1, 2, 3, 4].map(event));
  const at = new Date();
  const signed = (seq: number) => signCheckpoint(key, 'org_1', chain[seq - 1]!, at);

  /** An in-memory log: the entries, the checkpoints in the database, and the head kept outside. */
  const logOf = (
    entries: AuditEntry[],
    checkpoints: Checkpoint[],
    outside: Checkpoint | null = null,
    diverged: number | null = null,
  ) => {
    const log: AuditLog = {
      seal: async () => 0,
      list: async () => ({ items: [], nextBeforeSeq: null }),
      signedHead: async () => outside,
      divergedSince: async () => diverged,
      readChain: (_orgId, read) =>
        read({
          checkpoints,
          entries: async function* () {
            yield entries;
          },
        }),
    };
    return log;
  };

  it('accepts a chain whose head is signed', async () => {
    const result = await verifyAudit(logOf(chain, [signed(2), signed(4)], signed(4)), 'org_1', [key]);
    expect(result).toMatchObject({ valid: true, firstBrokenSeq: null, reason: null });
  });

  it('fails a checkpoint under an unknown key id instead of skipping it', async () => {
    const relabelled = { ...signed(2), keyId: 'feedfacefeedface' };
    const result = await verifyAudit(logOf(chain, [relabelled, signed(4)]), 'org_1', [key]);
    expect(result).toMatchObject({ valid: false, firstBrokenSeq: 2, reason: 'unknown_key_id' });
  });

  it('fails a chain cut behind the signed head kept outside', async () => {
    const result = await verifyAudit(logOf(chain.slice(0, 2), [signed(2)], signed(4)), 'org_1', [key]);
    expect(result).toMatchObject({ valid: false, firstBrokenSeq: 3, reason: 'truncated' });
  });

  it('names the first entry cut from the end, not the unsigned one the cut left last', async () => {
    const result = await verifyAudit(logOf(chain.slice(0, 3), [signed(2), signed(4)], signed(4)), 'org_1', [
      key,
    ]);
    expect(result).toMatchObject({ valid: false, firstBrokenSeq: 4, reason: 'truncated' });
  });

  it('fails a chain whose last entry carries no signed checkpoint', async () => {
    const result = await verifyAudit(logOf(chain, [signed(2)]), 'org_1', [key]);
    expect(result).toMatchObject({ valid: false, firstBrokenSeq: 4, reason: 'unsigned_head' });
  });

  it('fails from the first entry sealed after the chain left the signed head, whatever the chain is now (QA)', async () => {
    // Intact, signed, and following its head: only the record kept outside says entries went.
    const result = await verifyAudit(logOf(chain, [signed(2), signed(4)], signed(4), 3), 'org_1', [key]);
    expect(result).toMatchObject({ valid: false, firstBrokenSeq: 3, reason: 'diverged' });
    // An earlier break still wins.
    const cut = await verifyAudit(logOf(chain.slice(0, 1), [signed(2)], signed(2), 3), 'org_1', [key]);
    expect(cut).toMatchObject({ firstBrokenSeq: 2, reason: 'truncated' });
  });

  it("fails another org's signed head and a forged signature", async () => {
    const elsewhere = signCheckpoint(key, 'org_2', chain[3]!, at);
    expect(await verifyAudit(logOf(chain, [signed(4)], elsewhere), 'org_1', [key])).toMatchObject({
      valid: false,
      reason: 'bad_signature',
    });
    const forged = { ...signed(4), signature: '0'.repeat(64) };
    expect(await verifyAudit(logOf(chain, [forged]), 'org_1', [key])).toMatchObject({
      valid: false,
      firstBrokenSeq: 4,
      reason: 'bad_signature',
    });
  });
});

describe('scrubDetails', () => {
  it('redacts secret-named fields and token-shaped values at any depth', () => {
    const token = `csk_${'a'.repeat(43)}`;
    expect(
      scrubDetails({
        name: 'ok',
        password: 'x',
        nested: { secret: 'y', note: `uses ${token}` },
        list: [token],
        session_token: 'z',
        api_key: 'k',
        max_tokens: 100,
        usage: { input_tokens: 5 },
        secret_hint: '…abcd',
        key_id: 'key_1',
      }),
    ).toEqual({
      session_token: '[redacted]',
      api_key: '[redacted]',
      max_tokens: 100,
      usage: { input_tokens: 5 },
      secret_hint: '…abcd',
      key_id: 'key_1',
      name: 'ok',
      password: '[redacted]',
      nested: { secret: '[redacted]', note: '[redacted]' },
      list: ['[redacted]'],
    });
  });
});
