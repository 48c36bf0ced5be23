import { invoke, invokeBody, openSession, setUpInvoking } from '../support/invoke-fixtures';
import { superuserQuery } from '../support/test-db';
import { startTestApp, type TestApp } from '../support/test-app';

let app: TestApp;
let lz4: boolean;

const query = async <T>(sql: string, params: unknown[] = []): Promise<T[]> =>
  (await superuserQuery(app.db.url, sql, params)).rows as T[];

beforeAll(async () => {
  app = await startTestApp({ workers: true });
  const [setting] = await query<{ lz4: boolean }>(
    `select 'lz4' = any (enumvals) as lz4 from pg_settings where name = 'default_toast_compression'`,
  );
  lz4 = setting?.lz4 === true;
});
afterAll(() => app.close());

describe("the invocation's large values, compressed with lz4 where the server has it", () => {
  it('sets the request and the output columns to lz4, or leaves the default', async () => {
    const columns = await query<{ attname: string; attcompression: string }>(
      `select attname, attcompression from pg_attribute
        where attrelid = 'invocations'::regclass and attname in ('request', 'output') order by attname`,
    );
    const method = lz4 ? 'l' : ''; // '' is the server's default (pglz)
    expect(columns).toEqual([
      { attname: 'output', attcompression: method },
      { attname: 'request', attcompression: method },
    ]);
  });

  it('stores a large prompt compressed that way, and reads it back whole', async () => {
    const setup = await setUpInvoking(app.http);
    const session = await openSession(app.http, setup.org.adminKey, {
      agent_id: setup.agentId,
      max_cost_usd: 10,
    });
    const words = Array.from({ length: 4_000 }, (_, i) => `word${(i * 7919) % 1000}`).join(' ');
    const res = await invoke(
      app.http,
      setup.org.adminKey,
      invokeBody(session.id, { messages: [{ role: 'user', content: words }] }),
    );
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('succeeded');

    const [row] = await query<{ method: string | null; content: string }>(
      `select pg_column_compression(request) as method, request->'messages'->0->>'content' as content
         from invocations where id = $1`,
      [res.body.id],
    );
    expect(row?.method).toBe(lz4 ? 'lz4' : 'pglz');
    expect(row?.content).toBe(words);
  });
});
