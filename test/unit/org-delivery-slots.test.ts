import { OrgAtCapacity } from '../../domain/org-at-capacity';
import { inOrgSlot, slotWaitMs, type OrgDeliverySlots } from '../../domain/webhooks/org-delivery-slots';

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

describe('a delivery that finds no slot', () => {
  const fakeSlots = (orgLine: string[], receiverLine: string[]): OrgDeliverySlots => ({
    take: async () => null,
    release: async () => [],
    leave: async () => undefined,
    owedTo: async () => orgLine,
    receiverOwedTo: async () => receiverLine,
  });
  const turn = {
    deliver: async () => 'delivered',
    tooLate: async () => 'failed',
    wake: async () => [],
    onError: () => undefined,
  };
  const job = { orgId: 'org_1', jobId: 'msg_1', webhookId: 'whk_1', queuedAt: 0, deferrals: 0 };

  it("is put back to wait, and told it is owed a slot by its receiver's line as by its org's (QA)", async () => {
    const refused = (slots: OrgDeliverySlots) =>
      inOrgSlot(slots, 1000, job, turn).catch((err: unknown) => err);
    const byReceiver = (await refused(fakeSlots([], ['msg_1']))) as OrgAtCapacity;
    expect(byReceiver).toBeInstanceOf(OrgAtCapacity);
    await expect(byReceiver.owed()).resolves.toBe(true);
    const byOrg = (await refused(fakeSlots(['msg_1'], []))) as OrgAtCapacity;
    await expect(byOrg.owed()).resolves.toBe(true);
    const byNone = (await refused(fakeSlots(['msg_2'], ['msg_3']))) as OrgAtCapacity;
    await expect(byNone.owed()).resolves.toBe(false);
  });
});
