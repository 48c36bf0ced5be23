import { randomBytes } from 'node:crypto';
import { masterKeyId } from '../../infra/crypto/keyring';
import { signupOrg } from '../support/factories';
import { runNpmScript } from '../support/service-process';
import { startTestApp, TEST_MASTER_KEY, type TestApp } from '../support/test-app';
import { TEST_REDIS_URL } from '../support/test-db';

jest.setTimeout(120_000);

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
  const org = await signupOrg(app.http);
  for (const name of ['a', 'b'])
    await app.http.post(
      '/v1/credentials',
      { name, provider: 'openai', secret: `sk-${name}-${'x'.repeat(20)}` },
      org.adminKey,
    );
});
afterAll(() => app.close());

const NEW_KEY = randomBytes(32).toString('base64');
const env = (extra: Record<string, string>) => ({
  DATABASE_URL: app.db.url,
  REDIS_URL: TEST_REDIS_URL,
  CP_REDIS_PREFIX: `${app.prefix}e`,
  LOG_LEVEL: 'info',
  CP_MASTER_KEY: NEW_KEY,
  ...extra,
});

async function run(extra: Record<string, string>) {
  const proc = runNpmScript('master-key:reseal', env(extra));
  await new Promise<void>((resolve) => proc.child.on('close', () => resolve()));
  return { code: proc.child.exitCode, output: proc.output() };
}

describe('npm run master-key:reseal', () => {
  it('fails without touching a row when the old key is not configured, and says what to do', async () => {
    const { code, output } = await run({});
    expect(code).not.toBe(0);
    expect(output).toMatch(/CP_MASTER_KEY_PREVIOUS/);
    const ids = await app.infra.knex('credentials').distinct('key_id');
    expect(ids).toEqual([{ key_id: masterKeyId(Buffer.from(TEST_MASTER_KEY, 'base64')) }]);
  });

  it('reseals every credential under the new key', async () => {
    const { code, output } = await run({ CP_MASTER_KEY_PREVIOUS: TEST_MASTER_KEY });
    expect({ code, output }).toMatchObject({
      code: 0,
      output: expect.stringContaining('done: 2 credentials resealed'),
    });
    const ids = await app.infra.knex('credentials').distinct('key_id');
    expect(ids).toEqual([{ key_id: masterKeyId(Buffer.from(NEW_KEY, 'base64')) }]);
  });

  it('reseals a row sealed before provider and base_url were bound, and names one that does not open', async () => {
    const rows = app.infra.knex('credentials');
    const [a, b] = await rows.clone().orderBy('name').select('ref', 'org_id');
    if (!a || !b) throw new Error('the credentials of beforeAll are missing');
    // a: as the previous release sealed it, under the old key; b: a resealed row marked 1 by hand.
    const old = app.infra.credentialSealer.seal(
      `sk-a-${'x'.repeat(20)}`,
      `credential\n${a.org_id}\n${a.ref}`,
    );
    await rows
      .clone()
      .where({ ref: a.ref })
      .update({ sealed_secret: old.sealed, key_id: old.keyId, aad_version: 1 });
    await rows.clone().where({ ref: b.ref }).update({ aad_version: 1 });

    const { code, output } = await run({ CP_MASTER_KEY_PREVIOUS: TEST_MASTER_KEY });
    expect(code).not.toBe(0);
    expect(output).toContain(`do not open: ${b.ref}.`);
    const after = await rows.clone().orderBy('name').select('aad_version', 'key_id');
    const newKeyId = masterKeyId(Buffer.from(NEW_KEY, 'base64'));
    expect(after).toEqual([
      { aad_version: 2, key_id: newKeyId },
      { aad_version: 1, key_id: newKeyId },
    ]);
  });
});
