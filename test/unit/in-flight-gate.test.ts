import { InFlightGate } from '../../api/http/in-flight-gate';
import { DomainError } from '../../domain/errors';

/** A promise the test settles, and the gate's answer to work that waits on it. */
function held() {
  let release: () => void = () => undefined;
  const until = new Promise<void>((resolve) => (release = resolve));
  return { until, release };
}

const refusal = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (err: unknown) => err,
  );

describe('a gate on costly requests in flight', () => {
  it("refuses an org's second at once with 429 and Retry-After 1, and lets other orgs in", async () => {
    const gate = new InFlightGate('audit verification', 1, 2);
    const first = held();
    const running = gate.run('org_a', () => first.until);
    const second = await refusal(gate.run('org_a', async () => 'never'));
    expect(second).toBeInstanceOf(DomainError);
    expect(second).toMatchObject({ code: 'rate_limited', extra: { retry_after_seconds: 1 } });
    expect((second as Error).message).toBe(
      'audit verification: the org has 1 running, the most at once; retry in 1 s',
    );
    expect(await gate.run('org_b', async () => 'b ran')).toBe('b ran');
    first.release();
    await running;
    expect(await gate.run('org_a', async () => 'a again')).toBe('a again');
  });

  it('refuses past the total across orgs, and frees the place of work that failed', async () => {
    const gate = new InFlightGate('policy preview', 1, 2);
    const a = held();
    const b = held();
    const runs = [gate.run('org_a', () => a.until), gate.run('org_b', () => b.until)];
    const third = await refusal(gate.run('org_c', async () => 'never'));
    expect((third as Error).message).toBe(
      'policy preview: 2 running on this server, the most at once; retry in 1 s',
    );
    a.release();
    b.release();
    await Promise.all(runs);
    await expect(gate.run('org_c', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await gate.run('org_c', async () => 'c ran')).toBe('c ran');
  });

  it('says at once whether run would be refused, taking no place (work that comes before it)', async () => {
    const gate = new InFlightGate('policy preview', 1, 2);
    const a = held();
    const b = held();
    const running = gate.run('org_a', () => a.until);
    expect(() => gate.assertRoom('org_a')).toThrow('policy preview: the org has 1 running');
    expect(() => gate.assertRoom('org_b')).not.toThrow();
    expect(() => gate.assertRoom('org_b')).not.toThrow(); // asking took nothing
    const other = gate.run('org_b', () => b.until);
    expect(() => gate.assertRoom('org_c')).toThrow('policy preview: 2 running on this server');
    a.release();
    b.release();
    await Promise.all([running, other]);
    expect(() => gate.assertRoom('org_a')).not.toThrow();
  });
});
