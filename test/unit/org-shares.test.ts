import { OrgShares, shareWaitMs } from '../../domain/invocations/org-shares';
import { orgShareOf } from '../../infra/container';
import { loadConfig } from '../../infra/config';

describe("an org's share of a worker's invoke slots", () => {
  it('gives an org its share and no more, and each org its own', () => {
    const shares = new OrgShares(2);
    expect([shares.take('org_a'), shares.take('org_a'), shares.take('org_a')]).toEqual([true, true, false]);
    expect(shares.hasRoom('org_a')).toBe(false);
    expect(shares.take('org_b')).toBe(true);
    shares.release('org_a');
    expect(shares.hasRoom('org_a')).toBe(true);
    expect(shares.take('org_a')).toBe(true);
  });

  it('forgets an org that runs nothing, and a release too many does not lend it a slot', () => {
    const shares = new OrgShares(1);
    shares.take('org_a');
    shares.release('org_a');
    shares.release('org_a');
    expect(shares.take('org_a')).toBe(true);
    expect(shares.take('org_a')).toBe(false);
  });

  it('tells its listeners after every release, whoever released, until they stop listening', () => {
    const shares = new OrgShares(1);
    const heard: boolean[] = [];
    const stop = shares.onRelease(() => heard.push(shares.hasRoom('org_a')));
    shares.take('org_a');
    shares.release('org_a');
    expect(heard).toEqual([true]);
    stop();
    shares.take('org_a');
    shares.release('org_a');
    expect(heard).toEqual([true]);
  });

  it('is half the worker slots unless configured', () => {
    expect(orgShareOf(loadConfig({}))).toBe(128);
    expect(orgShareOf(loadConfig({ CP_INVOKE_CONCURRENCY: '1' }))).toBe(1);
    expect(orgShareOf(loadConfig({ CP_INVOKE_CONCURRENCY: '10', CP_INVOKE_ORG_CONCURRENCY: '7' }))).toBe(7);
  });
});

describe('how long a call past its share waits', () => {
  it('a quarter second at first, doubling to 4 s, and half to all of it', () => {
    expect(shareWaitMs(0, () => 1)).toBe(250);
    expect(shareWaitMs(0, () => 0)).toBe(125);
    expect(shareWaitMs(2, () => 1)).toBe(1000);
    expect(shareWaitMs(4, () => 1)).toBe(4000);
    expect(shareWaitMs(40, () => 1)).toBe(4000);
  });
});
