import { slotWaitMs } from '../../domain/webhooks/org-delivery-slots';

describe('how long a webhook delivery waits for its org to have a slot free', () => {
  it('waits 250 to 1000 ms the first time, jittered', () => {
    expect(slotWaitMs(0, () => 0)).toBe(250);
    expect(slotWaitMs(0, () => 0.999)).toBe(999);
  });

  it('doubles with each wait already made, up to 30 s, so a backlog is not taken several times a second', () => {
    const waits = [0, 1, 2, 3, 6, 7, 50].map((deferrals) => slotWaitMs(deferrals, () => 0));
    expect(waits).toEqual([250, 500, 1000, 2000, 16_000, 30_000, 30_000]);
  });
});
