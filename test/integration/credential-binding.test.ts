import { openCredential } from '../../domain/credentials/credential-use-cases';
import { StubProvider } from '../support/stub-provider';
import { startTestApp, type TestApp } from '../support/test-app';
import { invoke, openSession, setUpInvoking, type InvokeSetup } from '../support/invoke-fixtures';

/** The secret setUpInvoking stores for an OpenAI-compatible credential. */
const SECRET = 'sk-stub-secret-0001';
const ENV = { CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true', CP_INVOKE_ATTEMPTS: '1' };
const completion = {
  model: 'stub',
  choices: [{ message: { role: 'assistant', content: 'hi' } }],
  usage: { prompt_tokens: 3, completion_tokens: 1 },
};

let app: TestApp;
/** The provider the credential was stored for, and a host an attacker controls. */
let honest: StubProvider;
let evil: StubProvider;

beforeAll(async () => {
  honest = await new StubProvider().start();
  evil = await new StubProvider().start();
  honest.answer(200, completion);
  evil.answer(200, completion);
  app = await startTestApp({ workers: true, env: ENV });
});
afterAll(async () => {
  await app.close();
  await Promise.all([honest.stop(), evil.stop()]);
});

const setUp = () => setUpInvoking(app.http, { baseUrl: honest.url });
const rowOf = (ref: string) => app.infra.knex('credentials').where({ ref });

async function invokeWith(on: TestApp, setup: InvokeSetup) {
  const session = await openSession(on.http, setup.org.adminKey, {
    agent_id: setup.agentId,
    max_cost_usd: 1,
  });
  const res = await invoke(on.http, setup.org.adminKey, {
    session_id: session.id,
    model: 'mock-1',
    messages: [{ role: 'user', content: 'hello' }],
    max_tokens: 16,
  });
  return res.body;
}

describe('a sealed credential is bound to its provider, base_url and version', () => {
  it('calls the provider it was stored for', async () => {
    const setup = await setUp();
    expect(await invokeWith(app, setup)).toMatchObject({ status: 'succeeded' });
    expect(honest.requests.at(-1)?.headers.authorization).toBe(`Bearer ${SECRET}`);
  });

  it('does not open once its base_url was re-pointed in the database: the other host gets nothing', async () => {
    const setup = await setUp();
    await rowOf(setup.credentialRef).update({ base_url: evil.url });
    const invocation = await invokeWith(app, setup);
    expect(invocation).toMatchObject({ status: 'failed', error: { error_code: 'credential_unreadable' } });
    expect(evil.requests).toHaveLength(0);
  });

  it('does not open once its provider was changed in the database', async () => {
    const setup = await setUp();
    const before = honest.requests.length;
    // `openai` honours a base_url too, so without the binding the key would still go out.
    await rowOf(setup.credentialRef).update({ provider: 'openai' });
    const invocation = await invokeWith(app, setup);
    expect(invocation).toMatchObject({ status: 'failed', error: { error_code: 'credential_unreadable' } });
    expect(honest.requests).toHaveLength(before);
  });

  it('does not open with another version number, and a rotation seals the new one', async () => {
    const setup = await setUp();
    const open = () =>
      openCredential(
        { uow: app.infra.uow, sealer: app.infra.credentialSealer },
        setup.org.orgId,
        setup.credentialRef,
      );
    await rowOf(setup.credentialRef).update({ version: 2 });
    await expect(open()).rejects.toThrow();
    await rowOf(setup.credentialRef).update({ version: 1 });
    const rotated = await app.http.post<{ version: number }>(
      `/v1/credentials/${setup.credentialRef}/rotate`,
      { secret: 'sk-rotated-secret-0002' },
      setup.org.adminKey,
    );
    expect(rotated.body.version).toBe(2);
    expect((await open()).secret).toBe('sk-rotated-secret-0002');
  });
});

describe('credentials sealed before the binding (aad_version 1)', () => {
  /** A row as the previous release wrote it: associated data of org and ref only. */
  async function sealAsBefore(setup: InvokeSetup): Promise<void> {
    const context = `credential\n${setup.org.orgId}\n${setup.credentialRef}`;
    const sealed = app.infra.credentialSealer.seal(SECRET, context);
    await rowOf(setup.credentialRef).update({
      sealed_secret: sealed.sealed,
      key_id: sealed.keyId,
      aad_version: 1,
    });
  }
  const restart = () =>
    startTestApp({
      database: app.db,
      redisPrefix: `${app.prefix}r`,
      workers: true,
      captureLogs: true,
      env: ENV,
    });

  it('are refused until resealed, resealed when the service starts, and then work', async () => {
    const setup = await setUp();
    await sealAsBefore(setup);
    await expect(
      openCredential(
        { uow: app.infra.uow, sealer: app.infra.credentialSealer },
        setup.org.orgId,
        setup.credentialRef,
      ),
    ).rejects.toThrow(/master-key:reseal/);
    expect(await invokeWith(app, setup)).toMatchObject({ error: { error_code: 'credential_unreadable' } });

    const restarted = await restart();
    try {
      expect(await rowOf(setup.credentialRef).first()).toMatchObject({ aad_version: 2 });
      const before = honest.requests.length;
      expect(await invokeWith(restarted, setup)).toMatchObject({ status: 'succeeded' });
      expect(honest.requests.slice(before).map((r) => r.headers.authorization)).toEqual([`Bearer ${SECRET}`]);
      const audit = await restarted.http.get<{ data: { resource: { id: string }; details: unknown }[] }>(
        '/v1/audit?action=credential.resealed',
        setup.org.adminKey,
      );
      expect(audit.body.data).toEqual([
        expect.objectContaining({
          resource: expect.objectContaining({ id: setup.credentialRef }),
          details: expect.objectContaining({ from_aad_version: 1, to_aad_version: 2 }),
        }),
      ]);
    } finally {
      await restarted.close();
    }
  });

  it('cannot be faked by flipping a resealed row back to 1 and re-pointing it', async () => {
    const setup = await setUp();
    await rowOf(setup.credentialRef).update({ aad_version: 1, base_url: evil.url });
    const restarted = await restart();
    try {
      // The start-up reseal cannot open it as a v1 row, so it stays refused.
      expect(await rowOf(setup.credentialRef).first()).toMatchObject({ aad_version: 1 });
      const warning = restarted.logs.find((line) => line.includes('stay refused'));
      expect(warning).toContain(setup.credentialRef);
      expect(warning).toContain('master-key:reseal');
      const invocation = await invokeWith(restarted, setup);
      expect(invocation).toMatchObject({ status: 'failed', error: { error_code: 'credential_unreadable' } });
    } finally {
      await restarted.close();
    }
    expect(evil.requests).toHaveLength(0);
  });
});
