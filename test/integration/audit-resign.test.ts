import { randomBytes } from 'node:crypto';
import { checkpointKeyFrom } from '../../domain/audit/checkpoint';
import { resignCheckpoints, type ResignReport } from '../../domain/audit/resign-checkpoints';
import { PgCheckpointStore } from '../../infra/audit/pg-checkpoint-store';
import { RedisSignedHeads } from '../../infra/audit/redis-signed-heads';
import { mintKey, signupOrg, type SignedUpOrg } from '../support/factories';
import { superuserQuery } from '../support/test-db';
import { startTestApp, TEST_MASTER_KEY, type TestApp } from '../support/test-app';

const KEY_B = randomBytes(32).toString('base64');
const idOf = (key: string) => checkpointKeyFrom(Buffer.from(key, 'base64')).id;
const ID_A = idOf(TEST_MASTER_KEY);
const ID_B = idOf(KEY_B);

// One database and one Redis prefix, as seen by the service at each step of a rotation.
let underA: TestApp; // before: signs with A
let rotated: TestApp; // restarted with B, and A as previous, where the reseal runs
let onlyB: TestApp; // after A was dropped

beforeAll(async () => {
  underA = await startTestApp();
  const replica = (env: Record<string, string>) =>
    startTestApp({ database: underA.db, redisPrefix: underA.prefix, env });
  rotated = await replica({ CP_MASTER_KEY: KEY_B, CP_MASTER_KEY_PREVIOUS: TEST_MASTER_KEY });
  onlyB = await replica({ CP_MASTER_KEY: KEY_B });
});
afterAll(async () => {
  await onlyB.close();
  await rotated.close();
  await underA.close();
});

/** Mints keys and seals after each, so the chain carries a checkpoint per mint. */
const grow = async (app: TestApp, org: SignedUpOrg, mints: number) => {
  for (let i = 0; i < mints; i++) {
    await mintKey(app.http, org.adminKey, ['audit:read']);
    await app.infra.auditLog.sealAll();
  }
};

const verify = async (app: TestApp, org: SignedUpOrg) => {
  const res = await app.http.get<{ valid: boolean; first_broken_seq: number | null }>(
    '/v1/audit/verify',
    org.adminKey,
  );
  expect(res.status).toBe(200);
  return res.body;
};

const resign = (batchSize = 500, onProgress?: (what: string, done: number) => void) =>
  resignCheckpoints(
    {
      store: new PgCheckpointStore(
        rotated.infra.knex,
        new RedisSignedHeads(rotated.infra.redis, rotated.prefix),
      ),
      current: rotated.infra.checkpointKey,
      keys: rotated.infra.checkpointKeys,
      batchSize,
    },
    onProgress,
  );

const checkpoints = (orgId: string): Promise<{ seq: string; key_id: string; signature: string }[]> =>
  underA.infra
    .knex('audit_checkpoints')
    .where({ org_id: orgId })
    .orderBy('seq')
    .select('seq', 'key_id', 'signature');
const headKey = (orgId: string) => `${underA.prefix}:audit:head:${orgId}`;
const refusedOf = (report: ResignReport, orgId: string) => report.refused.filter((r) => r.orgId === orgId);

/** What any database superuser can do: switch triggers off for the session, then change rows. */
const asSuperuser = (sql: string) =>
  superuserQuery(underA.db.url, `begin; set local session_replication_role = replica; ${sql} commit;`);

describe('re-signing audit checkpoints after a master key rotation', () => {
  it('re-signs every checkpoint and the signed head under the new key, so verify passes with only it', async () => {
    const org = await signupOrg(underA.http);
    await grow(underA, org, 4);
    const before = await checkpoints(org.orgId);
    expect(new Set(before.map((c) => c.key_id))).toEqual(new Set([ID_A]));
    expect(await verify(onlyB, org)).toMatchObject({ valid: false }); // what dropping A did before

    const progress: string[] = [];
    const report = await resign(2, (what, done) => progress.push(`${what} ${done}`));
    expect(report).toEqual({ resigned: before.length, headsResigned: 1, refused: [] });
    expect(progress.filter((p) => p.startsWith('checkpoints')).length).toBeGreaterThan(1); // in batches
    const after = await checkpoints(org.orgId);
    expect(after.map((c) => [c.seq, c.key_id])).toEqual(before.map((c) => [c.seq, ID_B]));
    expect(await underA.infra.redis.hget(headKey(org.orgId), 'key_id')).toBe(ID_B);

    expect(await verify(onlyB, org)).toEqual(
      expect.objectContaining({ valid: true, first_broken_seq: null }),
    );
    expect(await resign()).toEqual({ resigned: 0, headsResigned: 0, refused: [] }); // nothing left to do
  });

  it('is safe while the sealer adds checkpoints under the new key', async () => {
    const org = await signupOrg(underA.http);
    await grow(underA, org, 3);
    const [report] = await Promise.all([resign(1), grow(rotated, org, 3)]);
    expect(report.refused).toEqual([]);
    expect(new Set((await checkpoints(org.orgId)).map((c) => c.key_id))).toEqual(new Set([ID_B]));
    expect(await verify(onlyB, org)).toMatchObject({ valid: true, first_broken_seq: null });
  });

  it('never re-signs a checkpoint whose signature does not verify: it names it and verify keeps failing', async () => {
    const org = await signupOrg(underA.http);
    await grow(underA, org, 4);
    const [, forged, relabelled] = await checkpoints(org.orgId);
    if (!forged || !relabelled) throw new Error('expected checkpoints');
    await asSuperuser(`
      update audit_checkpoints set signature = '${'0'.repeat(64)}' where org_id = '${org.orgId}' and seq = ${forged.seq};
      update audit_checkpoints set key_id = 'feedfacefeedface' where org_id = '${org.orgId}' and seq = ${relabelled.seq};`);

    const report = await resign();
    expect(refusedOf(report, org.orgId)).toEqual([
      {
        orgId: org.orgId,
        seq: Number(forged.seq),
        keyId: ID_A,
        place: 'checkpoint',
        reason: 'bad_signature',
      },
      {
        orgId: org.orgId,
        seq: Number(relabelled.seq),
        keyId: 'feedfacefeedface',
        place: 'checkpoint',
        reason: 'unknown_key_id',
      },
    ]);
    const after = await checkpoints(org.orgId);
    expect(after.filter((c) => c.key_id !== ID_B).map((c) => c.seq)).toEqual([forged.seq, relabelled.seq]);
    expect(await verify(onlyB, org)).toMatchObject({ valid: false, first_broken_seq: Number(forged.seq) });
    expect(await verify(rotated, org)).toMatchObject({ valid: false, first_broken_seq: Number(forged.seq) });
  });

  it('never re-signs a signed head in Redis whose signature does not verify', async () => {
    const org = await signupOrg(underA.http);
    await grow(underA, org, 2);
    await underA.infra.redis.hset(headKey(org.orgId), 'signature', 'f'.repeat(64));

    const report = await resign();
    const head = await underA.infra.redis.hgetall(headKey(org.orgId));
    expect(refusedOf(report, org.orgId)).toEqual([
      { orgId: org.orgId, seq: Number(head.seq), keyId: ID_A, place: 'signed_head', reason: 'bad_signature' },
    ]);
    expect(head).toMatchObject({ key_id: ID_A, signature: 'f'.repeat(64) });
    expect(await verify(onlyB, org)).toMatchObject({ valid: false });
  });

  it.each([
    'update audit_checkpoints set hash = $$x$$',
    'update audit_checkpoints set signature = $$x$$',
    'update audit_checkpoints set seq = seq + 1000, key_id = $$x$$',
    'update audit_checkpoints set at = now(), key_id = $$x$$',
    'delete from audit_checkpoints',
  ])('the database still refuses any other change to a checkpoint: %s', async (sql) => {
    await expect(superuserQuery(underA.db.url, sql)).rejects.toThrow(/append-only/);
  });
});
