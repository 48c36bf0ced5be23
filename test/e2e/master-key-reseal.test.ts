import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { checkpointKeyFrom } from '../../domain/audit/checkpoint';
import { webhookSealingContext } from '../../domain/webhooks/webhook';
import { KeyringBox, masterKeyId } from '../../infra/crypto/keyring';
import { resolveKeyring } from '../../infra/master-key';
import { signupOrg } from '../support/factories';
import { runNpmScript } from '../support/service-process';
import { startTestApp, TEST_MASTER_KEY, type TestApp } from '../support/test-app';
import { TEST_REDIS_URL } from '../support/test-db';

jest.setTimeout(120_000);

let app: TestApp;
let webhookSecret: string;
beforeAll(async () => {
  app = await startTestApp();
  const org = await signupOrg(app.http);
  const webhook = await app.http.post<{ secret: string }>(
    '/v1/webhooks',
    { url: 'https://hooks.example.com/approvals', events: ['approval.requested'] },
    org.adminKey,
  );
  expect(webhook.status).toBe(201);
  webhookSecret = webhook.body.secret;
  for (const name of ['a', 'b'])
    await app.http.post(
      '/v1/credentials',
      { name, provider: 'openai', secret: `sk-${name}-${'x'.repeat(20)}` },
      org.adminKey,
    );
  await app.infra.auditLog.sealAll(); // checkpoints signed under the old key, for the reseal to re-sign
});
afterAll(() => app.close());

const NEW_KEY = randomBytes(32).toString('base64');
const NEW_CHECKPOINT_KEY_ID = checkpointKeyFrom(Buffer.from(NEW_KEY, 'base64')).id;
const checkpoints = () => app.infra.knex('audit_checkpoints');
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

  it('reseals every credential and re-signs every audit checkpoint under the new key', async () => {
    const signed = Number((await checkpoints().count({ n: '*' }))[0]?.n);
    expect(signed).toBeGreaterThan(0);
    const { code, output } = await run({ CP_MASTER_KEY_PREVIOUS: TEST_MASTER_KEY });
    expect({ code, output }).toMatchObject({
      code: 0,
      output: expect.stringContaining('done: 2 credentials resealed'),
    });
    expect(output).toContain('done: 1 webhook secrets resealed');
    expect(output).toContain(`done: ${signed} audit checkpoints and 0 signed heads re-signed`);
    const ids = await app.infra.knex('credentials').distinct('key_id');
    expect(ids).toEqual([{ key_id: masterKeyId(Buffer.from(NEW_KEY, 'base64')) }]);
    expect(await checkpoints().distinct('key_id')).toEqual([{ key_id: NEW_CHECKPOINT_KEY_ID }]);
  });

  it('reseals every webhook signing secret, which then opens under the new key alone', async () => {
    const [row] = await app.infra.knex('webhooks').select('id', 'org_id', 'url', 'key_id', 'sealed_secret');
    if (!row) throw new Error('the webhook of beforeAll is missing');
    expect(row.key_id).toBe(masterKeyId(Buffer.from(NEW_KEY, 'base64')));
    const newKeyOnly = new KeyringBox(resolveKeyring(NEW_KEY, undefined, tmpdir()), 'webhooks');
    const context = webhookSealingContext({ orgId: row.org_id, id: row.id, url: row.url });
    expect(newKeyOnly.open({ keyId: row.key_id, sealed: row.sealed_secret }, context)).toBe(webhookSecret);
    const recorded = async (table: string) =>
      Number((await app.infra.knex(table).where({ action: 'webhook.resealed' }).count({ n: '*' }))[0]?.n);
    expect((await recorded('audit_outbox')) + (await recorded('audit_entries'))).toBe(1);
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

  it('leaves a checkpoint whose signature does not verify as it is, and exits non-zero naming it', async () => {
    const [row] = await checkpoints().orderBy('seq').limit(1).select('org_id', 'seq');
    if (!row) throw new Error('the checkpoints of beforeAll are missing');
    const oldKeyId = checkpointKeyFrom(Buffer.from(TEST_MASTER_KEY, 'base64')).id;
    const forged = { key_id: oldKeyId, signature: '0'.repeat(64) };
    await checkpoints().where({ org_id: row.org_id, seq: row.seq }).update(forged);

    const { code, output } = await run({ CP_MASTER_KEY_PREVIOUS: TEST_MASTER_KEY });
    expect(code).not.toBe(0);
    expect(output).toContain(`checkpoint org ${row.org_id} seq ${row.seq} (key ${oldKeyId}: bad_signature)`);
    const after = await checkpoints()
      .where({ org_id: row.org_id, seq: row.seq })
      .first('key_id', 'signature');
    expect(after).toEqual(forged);
  });
});
