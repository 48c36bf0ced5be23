import { randomBytes } from 'node:crypto';
import { openCredential } from '../../domain/credentials/credential-use-cases';
import { resealCredentials } from '../../domain/credentials/reseal';
import { signupOrg, type SignedUpOrg } from '../support/factories';
import { startTestApp, TEST_MASTER_KEY, type TestApp } from '../support/test-app';

const NEW_KEY = randomBytes(32).toString('base64');
let first: TestApp;
let org: SignedUpOrg;
const stored = new Map<string, string>();

beforeAll(async () => {
  first = await startTestApp();
  org = await signupOrg(first.http);
  for (let i = 0; i < 3; i++) {
    const secret = `sk-rotation-${randomBytes(12).toString('hex')}`;
    const res = await first.http.post<{ credential_ref: string }>(
      '/v1/credentials',
      { name: `c${i}`, provider: 'openai', secret },
      org.adminKey,
    );
    stored.set(res.body.credential_ref, secret);
  }
});
afterAll(() => first.close());

/** A replica of the same database configured with other master keys. */
const replica = (env: Record<string, string>) =>
  startTestApp({ database: first.db, redisPrefix: `${first.prefix}r`, env });

const openAll = async (app: TestApp) =>
  Promise.all(
    [...stored.keys()].map(
      async (ref) =>
        (await openCredential({ uow: app.infra.uow, sealer: app.infra.credentialSealer }, org.orgId, ref))
          .secret,
    ),
  );

describe('master key rotation', () => {
  it('opens old rows with the previous key, reseals them all, then needs only the new key', async () => {
    // A start whose keys open none of the stored secrets stops before it signs anything.
    await expect(replica({ CP_MASTER_KEY: NEW_KEY })).rejects.toThrow(
      /CP_MASTER_KEY: not the key this database was sealed with \(credentials under key [0-9a-f]{16}\)/,
    );

    const rotated = await replica({ CP_MASTER_KEY: NEW_KEY, CP_MASTER_KEY_PREVIOUS: TEST_MASTER_KEY });
    expect(await openAll(rotated)).toEqual([...stored.values()]);
    const sealer = rotated.infra.credentialSealer;
    const progress: number[] = [];
    const deps = { uow: rotated.infra.uow, clock: rotated.infra.clock, sealer };
    expect(await resealCredentials(deps, (n) => progress.push(n))).toBeGreaterThanOrEqual(3);
    expect(progress.length).toBeGreaterThan(0);
    expect(await resealCredentials(deps)).toBe(0); // running it again finds nothing to do
    const keyIds = await first.infra.knex('credentials').distinct('key_id').whereNotNull('sealed_secret');
    expect(keyIds).toEqual([{ key_id: sealer.currentKeyId }]);

    // Checkpoints signed under the old key still verify while it is configured.
    const verify = await rotated.http.get<{ valid: boolean }>('/v1/audit/verify', org.adminKey);
    expect(verify.body.valid).toBe(true);
    const audit = await rotated.http.get<{ data: { action: string; actor: { type: string } }[] }>(
      '/v1/audit?action=credential.resealed',
      org.adminKey,
    );
    expect(audit.body.data).toHaveLength(3);
    expect(audit.body.data.every((e) => e.actor.type === 'system')).toBe(true);
    await rotated.close();

    const onlyNew = await replica({ CP_MASTER_KEY: NEW_KEY });
    expect(await openAll(onlyNew)).toEqual([...stored.values()]);
    await onlyNew.close();
  });
});

describe('a start with a master key the database does not know', () => {
  it('stops when the database holds only audit checkpoints signed under another key, unless the key is said lost', async () => {
    const onlyAudit = await startTestApp();
    try {
      await signupOrg(onlyAudit.http);
      await onlyAudit.infra.auditLog.sealAll();
      const other = (env: Record<string, string>) =>
        startTestApp({ database: onlyAudit.db, redisPrefix: `${onlyAudit.prefix}k`, env, captureLogs: true });
      await expect(other({ CP_MASTER_KEY: NEW_KEY })).rejects.toThrow(
        /CP_MASTER_KEY: not the key this database was sealed with \(audit checkpoints under key [0-9a-f]{16}\)/,
      );
      const lost = await other({ CP_MASTER_KEY: NEW_KEY, CP_MASTER_KEY_LOST: 'true' });
      expect(lost.logs.some((l) => l.includes('sealed under master keys not configured'))).toBe(true);
      await lost.close();
    } finally {
      await onlyAudit.close();
    }
  });
});
