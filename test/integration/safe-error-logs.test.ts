import { eventually } from '../support/eventually';
import { mintKey, PASSWORD, signupOrg, uniqueEmail } from '../support/factories';
import { superuserQuery } from '../support/test-db';
import { startTestApp, type TestApp } from '../support/test-app';

jest.setTimeout(60_000);

/**
 * A database error carries the failing SQL, and PostgreSQL's `detail` the failing row, with its
 * values: a password hash, an email. The log must say which code, constraint and table failed,
 * and nothing of what was written. Logs are read at `info` (trace-level SQL logging is a
 * separate, deliberate debugging switch).
 */
let app: TestApp;

beforeAll(async () => {
  app = await startTestApp({ workers: true, env: { LOG_LEVEL: 'info' } });
  // Constraints only these tests trip: a user named "refuse me" cannot sign up, and the audit
  // entry of a key named "seal refused" cannot be sealed.
  await superuserQuery(
    app.db.url,
    `alter table users add constraint users_name_refused check (name is distinct from 'refuse me');
     alter table audit_entries add constraint audit_entries_refused
       check (details->>'name' is distinct from 'seal refused')`,
  );
});

afterAll(async () => {
  await app.close();
});

const logged = () => app.logs.join('');

interface LogEntry {
  msg: string;
  job?: string;
  request_id?: string;
  err?: Record<string, unknown>;
}
const entries = () => app.logs.map((l) => JSON.parse(l) as LogEntry);

describe('database errors in the server log', () => {
  it('logs the code, constraint and table of a failed insert, never the values it held', async () => {
    const email = uniqueEmail('leak');
    const res = await app.http.post('/v1/orgs/signup', {
      org_name: 'Leak Check Org',
      email,
      password: PASSWORD,
      name: 'refuse me',
    });
    expect(res.status).toBe(500);
    expect(res.body.error_code).toBe('internal_error');

    const entry = entries().find((e) => e.request_id === res.body.request_id && e.msg === 'unhandled error');
    expect(entry?.err).toMatchObject({ code: '23514', constraint: 'users_name_refused', table: 'users' });

    const text = logged();
    expect(text).not.toContain('scrypt$');
    expect(text).not.toContain(email);
    expect(text).not.toContain('refuse me');
    expect(text).not.toContain('Failing row');
    expect(text).not.toMatch(/insert into/i);
  });

  it('logs a failed job of a worker the same way: code, constraint and table, no values', async () => {
    const org = await signupOrg(app.http, 'Seal Check Org');
    const key = await mintKey(app.http, org.adminKey, ['read'], 'seal refused');
    // audit.seal runs every second and now fails on the key's entry.
    const failed = await eventually(() =>
      entries().find((e) => e.msg === 'job failed' && e.job === 'audit.seal'),
    );
    expect(failed.err).toMatchObject({
      code: '23514',
      constraint: 'audit_entries_refused',
      table: 'audit_entries',
    });

    const text = logged();
    expect(text).not.toContain('seal refused');
    expect(text).not.toContain(key.key.slice(0, 12));
    expect(text).not.toContain(key.id);
    expect(text).not.toMatch(/insert into/i);
  });
});
