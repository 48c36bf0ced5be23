import { slotWaitMs } from '../../domain/webhooks/org-delivery-slots';

describe('how long a webhook delivery waits for its org to have a slot free', () => {
  it('waits 250 to 1000 ms the first time, jittered', () => {
    expect(slotWaitMs(0, () => 0)).toBe(250);
    expect(slotWaitMs(0, () => 0.999)).toBe(999);
  });

  it('doubles its ceiling with each wait already made, up to 30 s, so a backlog is not taken several times a second', () => {
    const ceilings = [0, 1, 2, 3, 4, 5, 6, 50].map((deferrals) => slotWaitMs(deferrals, () => 1));
    expect(ceilings).toEqual([1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000]);
  });

  it('stays jittered at the ceiling, so waiters that reached it do not all ask at once', () => {
    const waits = [0, 0.5, 0.999].map((r) => slotWaitMs(20, () => r));
    expect(waits).toEqual([7500, 18_750, 29_977]);
  });
});
