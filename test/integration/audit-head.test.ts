import { mintKey, signupOrg, type SignedUpOrg } from '../support/factories';
import { superuserQuery } from '../support/test-db';
import { forgedChain } from '../support/audit-forgery';
import { startTestApp, type TestApp } from '../support/test-app';

interface Verification {
  valid: boolean;
  entries_checked: number;
  head: { seq: number; hash: string };
  first_broken_seq: number | null;
}
interface SignedHeadBody {
  org_id: string;
  seq: number;
  hash: string;
  key_id: string;
  signature: string;
  signed_at: string;
}

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp({ captureLogs: true });
});
afterAll(() => app.close());

/** One org's verifications run one at a time: one asked while another runs is retried, as told. */
const verify = async (org: SignedUpOrg): Promise<Verification> => {
  const res = await app.http.get<Verification>('/v1/audit/verify', org.adminKey);
  if (res.status === 429) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    return verify(org);
  }
  expect(res.status).toBe(200);
  return res.body;
};

/** Mints keys and seals after each, so the chain carries a checkpoint per mint. */
const grow = async (org: SignedUpOrg, mints: number) => {
  for (let i = 0; i < mints; i++) {
    await mintKey(app.http, org.adminKey, ['audit:read']);
    await app.infra.auditLog.sealAll();
  }
};

/** Events of the org waiting in the outbox to be sealed. */
const pending = async (orgId: string) =>
  Number((await app.infra.knex('audit_outbox').where({ org_id: orgId }).count({ n: '*' }))[0]?.n);

const checkpointSeqs = async (orgId: string): Promise<number[]> =>
  (await app.infra.knex('audit_checkpoints').where({ org_id: orgId }).orderBy('seq').select('seq')).map(
    (r: { seq: string }) => Number(r.seq),
  );

/** What any database superuser can do: switch triggers off for the session, then change rows. */
const asSuperuser = (sql: string) =>
  superuserQuery(app.db.url, `begin; set local session_replication_role = replica; ${sql} commit;`);

/** Deletes the newest entries AND their checkpoints, and moves the head back to match. */
const cutTail = (orgId: string, keepSeq: number) =>
  asSuperuser(`
    delete from audit_entries where org_id = '${orgId}' and seq > ${keepSeq};
    delete from audit_checkpoints where org_id = '${orgId}' and seq > ${keepSeq};
    update audit_heads set seq = ${keepSeq},
      hash = (select hash from audit_entries where org_id = '${orgId}' and seq = ${keepSeq})
      where org_id = '${orgId}';`);

/** Rewrites entry 2 and recomputes every hash after it, as the chain's own code would. */
const recomputeWithForgery = async (orgId: string) => {
  const forged = await forgedChain(app.infra.knex, orgId);
  const sql = forged
    .map(
      (e) =>
        `update audit_entries set details = '${JSON.stringify(e.details)}', prev_hash = '${e.prevHash}', hash = '${e.hash}' where org_id = '${orgId}' and seq = ${e.seq};
         update audit_checkpoints set hash = '${e.hash}' where org_id = '${orgId}' and seq = ${e.seq};`,
    )
    .join('\n');
  const last = forged.at(-1);
  await asSuperuser(`${sql} update audit_heads set hash = '${last?.hash}' where org_id = '${orgId}';`);
};

/** Runs `during` while the database refuses to seal the org's entries (a trigger), then lets it. */
async function whileSealingRefused(orgId: string, during: () => Promise<void>): Promise<void> {
  const name = `refuse_${orgId.toLowerCase()}`;
  await superuserQuery(
    app.db.url,
    `create function ${name}() returns trigger language plpgsql as $$ begin
       if new.org_id = '${orgId}' then raise exception 'refused'; end if; return new; end $$;
     create trigger ${name} before insert on audit_entries for each row execute function ${name}();`,
  );
  try {
    await during();
  } finally {
    await superuserQuery(app.db.url, `drop trigger ${name} on audit_entries; drop function ${name}();`);
  }
}

describe('a truncated tail', () => {
  it('fails verify when the newest entries and their checkpoints are deleted', async () => {
    const org = await signupOrg(app.http);
    await grow(org, 1);
    const keep = (await checkpointSeqs(org.orgId)).at(-1) as number;
    await grow(org, 3);
    expect(await verify(org)).toMatchObject({ valid: true });

    await cutTail(org.orgId, keep);
    expect(await checkpointSeqs(org.orgId)).not.toContain(keep + 1);
    expect(await verify(org)).toMatchObject({ valid: false, first_broken_seq: keep + 1 });
  });

  it('keeps failing after new entries have grown the chain past the old head', async () => {
    const org = await signupOrg(app.http);
    await grow(org, 1);
    const keep = (await checkpointSeqs(org.orgId)).at(-1) as number;
    await grow(org, 2);
    const headBefore = (await verify(org)).head.seq;

    await cutTail(org.orgId, keep);
    await grow(org, 4); // the sealer moves on from the rewound head
    const after = await verify(org);
    expect(after.head.seq).toBeGreaterThan(headBefore);
    // From the first entry that replaced a removed one (QA: new checkpoints at the removed seqs
    // moved it up to the old head's seq, vouching for entries that were gone).
    expect(after).toMatchObject({ valid: false, first_broken_seq: keep + 1 });
  });

  it('fails verify when entries sealed while the chain was held off its head are cut, the change undone (QA)', async () => {
    const org = await signupOrg(app.http);
    await grow(org, 2);
    const last = (await checkpointSeqs(org.orgId)).at(-1) as number;
    const where = `org_id = '${org.orgId}' and seq = ${last}`;
    const [row] = await app.infra.knex('audit_entries').whereRaw(where).select('hash');
    const hash = (row as { hash: string }).hash;
    const changed = `f${hash.slice(1)}`;
    // One changed hash holds the head kept in Redis still: the chain no longer passes through it.
    await asSuperuser(`update audit_entries set hash = '${changed}' where ${where};
      update audit_heads set hash = '${changed}' where org_id = '${org.orgId}';`);
    await grow(org, 2); // sealed, listed and signed in the database meanwhile
    // The change undone, and what was sealed since cut with its checkpoints.
    await asSuperuser(`update audit_entries set hash = '${hash}' where ${where};`);
    await cutTail(org.orgId, last);
    expect(await verify(org)).toMatchObject({ valid: false, first_broken_seq: last + 1 });
    await grow(org, 1); // and it stays so as the chain grows again
    expect(await verify(org)).toMatchObject({ valid: false, first_broken_seq: last + 1 });
    expect(app.logs.join('\n')).toContain('the chain no longer passes through the signed head kept in Redis');
  });
});

describe('the last entries deleted on their own (their checkpoint left)', () => {
  it('are read and verified, broken at the first one deleted, and new events are sealed after the checkpoint', async () => {
    const org = await signupOrg(app.http);
    await grow(org, 3);
    const last = (await checkpointSeqs(org.orgId)).at(-1) as number;
    await asSuperuser(`delete from audit_entries where org_id = '${org.orgId}' and seq >= ${last - 1};`);
    expect(await verify(org)).toMatchObject({ valid: false, first_broken_seq: last - 1 });
    await mintKey(app.http, org.adminKey, ['audit:read']); // chained after the gap, not into it

    // Still the first entry deleted, not the new one after the gap (QA: the seal moved it there).
    expect(await verify(org)).toMatchObject({ valid: false, first_broken_seq: last - 1 });
    const listed = await app.http.get<{ data: { seq: number }[] }>('/v1/audit?limit=2', org.adminKey);
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((e) => e.seq)).toEqual([last + 1, last - 2]);
    expect((await app.http.get('/v1/audit/head', org.adminKey)).status).toBe(200);
    expect(await pending(org.orgId)).toBe(0);
    expect(await app.infra.auditLog.sealAll()).toBeGreaterThanOrEqual(0);
  });
});

describe('a rewrite whose checkpoints were deleted with it', () => {
  it('is reported from the first entry after the last checkpoint the chain still passes', async () => {
    const org = await signupOrg(app.http);
    await grow(org, 4);
    const kept = (await checkpointSeqs(org.orgId))[1] as number;
    // Entry kept + 1 is forged and every hash after it recomputed; only the head kept in Redis
    // is left past it, and it shows the rewrite only at its own seq.
    const forged = (await forgedChain(app.infra.knex, org.orgId, kept + 1)).slice(kept);
    const updates = forged.map(
      (e) =>
        `update audit_entries set details = '${JSON.stringify(e.details)}', prev_hash = '${e.prevHash}', hash = '${e.hash}' where org_id = '${org.orgId}' and seq = ${e.seq};`,
    );
    await asSuperuser(`${updates.join('\n')}
      delete from audit_checkpoints where org_id = '${org.orgId}' and seq > ${kept};
      update audit_heads set hash = '${forged.at(-1)?.hash}' where org_id = '${org.orgId}';`);
    expect(await verify(org)).toMatchObject({ valid: false, first_broken_seq: kept + 1 });
  });
});

describe('a head row changed behind the service', () => {
  it('is put back by the sealer: verify answers, nothing collides, and the chain stays valid', async () => {
    const org = await signupOrg(app.http);
    await grow(org, 2);
    // audit_heads has no trigger: a plain UPDATE by the service's own role moves it.
    await superuserQuery(app.db.url, `update audit_heads set seq = seq - 1 where org_id = '${org.orgId}'`);
    await mintKey(app.http, org.adminKey, ['audit:read']);
    const result = await verify(org);
    expect(result).toMatchObject({ valid: true, first_broken_seq: null });
    expect(await pending(org.orgId)).toBe(0);
  });

  it('is not taken for changed when sealers of one org wait for each other', async () => {
    const org = await signupOrg(app.http);
    const seals = (n: number) => Array.from({ length: n }, () => app.infra.auditLog.seal(org.orgId));
    for (let round = 0; round < 5; round++)
      await Promise.all([
        ...Array.from({ length: 6 }, (_, i) =>
          mintKey(app.http, org.adminKey, ['audit:read'], `r${round}k${i}`),
        ),
        ...seals(6),
      ]);
    await Promise.all(seals(4));
    const mismatches = app.logs.filter((line) => line.includes('does not match') && line.includes(org.orgId));
    expect(mismatches).toEqual([]);
    expect(await pending(org.orgId)).toBe(0);
    expect(await verify(org)).toMatchObject({ valid: true, first_broken_seq: null });
  });

  it('is logged once a minute, however often a seal that then fails finds it', async () => {
    const org = await signupOrg(app.http);
    await grow(org, 2);
    await superuserQuery(app.db.url, `update audit_heads set seq = seq - 1 where org_id = '${org.orgId}'`);
    await whileSealingRefused(org.orgId, async () => {
      await mintKey(app.http, org.adminKey, ['audit:read']);
      for (let i = 0; i < 4; i++) await expect(app.infra.auditLog.seal(org.orgId)).rejects.toThrow('refused');
      const logged = app.logs.filter((l) => l.includes('head row does not match') && l.includes(org.orgId));
      expect(logged).toHaveLength(1);
    });
    await app.infra.auditLog.seal(org.orgId);
    expect(await pending(org.orgId)).toBe(0);
  });

  it('an org that cannot be sealed does not hold up the orgs after it', async () => {
    const [first, second] = (await Promise.all([signupOrg(app.http), signupOrg(app.http)])).sort((a, b) =>
      a.orgId < b.orgId ? -1 : 1,
    ) as [SignedUpOrg, SignedUpOrg];
    await app.infra.auditLog.sealAll();
    await whileSealingRefused(first.orgId, async () => {
      await mintKey(app.http, first.adminKey, ['audit:read']);
      await mintKey(app.http, second.adminKey, ['audit:read']);
      await expect(app.infra.auditLog.sealAll()).rejects.toThrow('refused');
      expect(await pending(first.orgId)).toBeGreaterThan(0);
      expect(await pending(second.orgId)).toBe(0);
    });
  });
});

describe('checkpoints relabelled with an unknown key id', () => {
  it('fails verify when the chain is recomputed and every checkpoint is relabelled', async () => {
    const org = await signupOrg(app.http);
    await grow(org, 3);
    await recomputeWithForgery(org.orgId);
    await asSuperuser(
      `update audit_checkpoints set key_id = 'feedfacefeedface' where org_id = '${org.orgId}';`,
    );
    expect(await verify(org)).toMatchObject({ valid: false });
  });

  it('fails it on the unknown key alone, with no signed head outside the database', async () => {
    const org = await signupOrg(app.http);
    await grow(org, 3);
    await recomputeWithForgery(org.orgId);
    await asSuperuser(
      `update audit_checkpoints set key_id = 'feedfacefeedface' where org_id = '${org.orgId}';`,
    );
    await app.infra.redis.del(`${app.prefix}:audit:head:${org.orgId}`); // as after a Redis restart
    const first = (await checkpointSeqs(org.orgId))[0];
    expect(await verify(org)).toMatchObject({ valid: false, first_broken_seq: first });
  });

  it('reports the first relabelled checkpoint even when the chain itself is intact', async () => {
    const org = await signupOrg(app.http);
    await grow(org, 3);
    const seqs = await checkpointSeqs(org.orgId);
    const relabelled = seqs[1] as number;
    await asSuperuser(
      `update audit_checkpoints set key_id = 'feedfacefeedface' where org_id = '${org.orgId}' and seq = ${relabelled};`,
    );
    expect(await verify(org)).toMatchObject({ valid: false, first_broken_seq: relabelled });
  });
});

describe('an untouched log', () => {
  it('verifies after the sealer ran many times, and GET /v1/audit/head gives its signed head', async () => {
    const org = await signupOrg(app.http);
    await grow(org, 5);
    await app.http.get('/v1/audit', org.adminKey); // a read seals too
    const result = await verify(org);
    expect(result).toMatchObject({ valid: true, first_broken_seq: null });
    expect((await checkpointSeqs(org.orgId)).length).toBe(5); // one per seal that found events

    const head = await app.http.get<SignedHeadBody>('/v1/audit/head', org.adminKey);
    expect(head.status).toBe(200);
    expect(head.body).toEqual({
      org_id: org.orgId,
      seq: result.head.seq,
      hash: result.head.hash,
      key_id: app.infra.checkpointKey.id,
      signature: expect.stringMatching(/^[0-9a-f]{64}$/),
      signed_at: expect.stringMatching(/Z$/),
    });
  });

  it('verifies while writers and sealers run at the same time', async () => {
    const org = await signupOrg(app.http);
    const verifications: Promise<Verification>[] = [];
    await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        await mintKey(app.http, org.adminKey, ['audit:read'], `c${i}`);
        if (i % 4 === 0) verifications.push(verify(org));
        if (i % 3 === 0) await app.infra.auditLog.sealAll();
      }),
    );
    const results = await Promise.all(verifications);
    expect(results.length).toBe(5);
    results.forEach((r) => expect(r).toMatchObject({ valid: true, first_broken_seq: null }));
    expect(await verify(org)).toMatchObject({ valid: true, head: { seq: 23 } });
  });

  it('reads checkpoints and entries from one snapshot, so a seal meanwhile cannot split them', async () => {
    const org = await signupOrg(app.http);
    await grow(org, 1);
    const seen = await app.infra.auditLog.readChain(org.orgId, async (chain) => {
      await grow(org, 1); // commits new entries and their checkpoint mid-read
      const entries: number[] = [];
      for await (const batch of chain.entries()) entries.push(...batch.map((e) => e.seq));
      return { checkpoint: chain.checkpoints.at(-1)?.seq, entry: entries.at(-1) };
    });
    expect(seen.entry).toBe(seen.checkpoint);
  });

  it('needs audit:read for the head', async () => {
    const org = await signupOrg(app.http);
    const key = await mintKey(app.http, org.adminKey, ['stats:read']);
    const res = await app.http.get('/v1/audit/head', key.key);
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error_code: 'insufficient_scope', required_scope: 'audit:read' });
  });
});
