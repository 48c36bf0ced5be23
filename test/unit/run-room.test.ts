import { RunRoom, type RoomTry } from '../../workers/run-room';

/** Room for `cap` at once, at most `share` of them one org's: as SyncRuns counts it. */
function roomOf(cap: number, share: number, maxWaitMs = 1000, maxWaiting = 10, maxWaitingPerOrg = 10) {
  const held = new Map<string, number>();
  let total = 0;
  const tryTake = (orgId: string): RoomTry => {
    if (total >= cap) return 'full';
    if ((held.get(orgId) ?? 0) >= share) return 'org_full';
    held.set(orgId, (held.get(orgId) ?? 0) + 1);
    total++;
    return 'taken';
  };
  const room = new RunRoom(tryTake, { maxWaitMs, maxWaiting, maxWaitingPerOrg });
  const release = (orgId: string, { quietly = false } = {}) => {
    held.set(orgId, (held.get(orgId) ?? 0) - 1);
    total--;
    if (!quietly) room.freed();
  };
  return { room, release, heldBy: (orgId: string) => held.get(orgId) ?? 0 };
}

/** Which of the promises have settled, and how, after the microtasks now queued ran. */
async function settled(promises: Promise<boolean>[]): Promise<(boolean | 'waiting')[]> {
  const states: (boolean | 'waiting')[] = promises.map(() => 'waiting');
  promises.forEach((p, i) => void p.then((v) => (states[i] = v)));
  await new Promise((r) => setImmediate(r));
  return states;
}

describe('room to run in an API process (RunRoom)', () => {
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['setImmediate', 'queueMicrotask', 'nextTick'] }));
  afterEach(() => jest.useRealTimers());

  it('gives room at once while there is some', async () => {
    const { room, heldBy } = roomOf(2, 2);
    expect(await settled([room.take('a'), room.take('a')])).toEqual([true, true]);
    expect(heldBy('a')).toBe(2);
    expect(room.size).toBe(0);
  });

  it('holds the rest in arrival order and gives them room as it frees', async () => {
    const { room, release, heldBy } = roomOf(1, 1);
    await room.take('a');
    const waiting = [room.take('a'), room.take('a')];
    expect(await settled(waiting)).toEqual(['waiting', 'waiting']);
    release('a');
    expect(await settled(waiting)).toEqual([true, 'waiting']);
    release('a');
    expect(await settled(waiting)).toEqual([true, true]);
    expect(heldBy('a')).toBe(1);
  });

  it('lets no newcomer of an org ahead of that org waiting, even with room free', async () => {
    const { room, release } = roomOf(2, 1);
    await room.take('a');
    const first = room.take('a');
    // Freed where the room does not hear of it (a worker's run in the same process).
    release('a', { quietly: true });
    const second = room.take('a');
    expect(await settled([first, second])).toEqual(['waiting', 'waiting']);
    room.freed();
    expect(await settled([first, second])).toEqual([true, 'waiting']);
  });

  it("passes over an org whose share is full: another org's waiter gets the room", async () => {
    const { room, release } = roomOf(2, 1);
    await room.take('a');
    await room.take('b');
    const waiting = [room.take('a'), room.take('a'), room.take('c')];
    release('b');
    expect(await settled(waiting)).toEqual(['waiting', 'waiting', true]);
    release('a');
    expect(await settled(waiting)).toEqual([true, 'waiting', true]);
  });

  it('gives up after the wait asked for, at most its own, and forgets the waiter', async () => {
    const { room, release, heldBy } = roomOf(1, 1, 500);
    await room.take('a');
    const short = room.take('a', 100);
    const long = room.take('a', 10_000);
    jest.advanceTimersByTime(100);
    expect(await settled([short, long])).toEqual([false, 'waiting']);
    jest.advanceTimersByTime(400);
    expect(await settled([short, long])).toEqual([false, false]);
    expect(room.size).toBe(0);
    release('a');
    expect(heldBy('a')).toBe(0);
  });

  it('waits not at all with no wait, nor past the most it holds, nor after clear', async () => {
    const none = roomOf(1, 1, 0);
    await none.room.take('a');
    expect(await settled([none.room.take('a')])).toEqual([false]);

    const few = roomOf(1, 1, 1000, 1);
    await few.room.take('a');
    const waiting = [few.room.take('a'), few.room.take('a')];
    expect(await settled(waiting)).toEqual(['waiting', false]);
    few.room.clear();
    expect(await settled(waiting)).toEqual([false, false]);
    expect(few.room.size).toBe(0);
  });

  it("keeps places for other orgs: one org's burst takes at most its own number of them (QA)", async () => {
    const { room } = roomOf(2, 2, 1000, 3, 2);
    await room.take('a');
    await room.take('a');
    const ofA = [room.take('a'), room.take('a'), room.take('a')];
    const ofB = room.take('b');
    expect(await settled([...ofA, ofB])).toEqual(['waiting', 'waiting', false, 'waiting']);
    expect(room.size).toBe(3);
  });
});
