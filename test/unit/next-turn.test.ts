import { turnsEvery } from '../../domain/next-turn';

/** Whether awaiting `between` let a setImmediate queued before it run. */
async function gaveATurn(between: () => Promise<void>): Promise<boolean> {
  let ran = false;
  setImmediate(() => (ran = true));
  await between();
  const answer = ran;
  await new Promise((resolve) => setImmediate(resolve));
  return answer;
}

const busy = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

it('lets the event loop have a turn only once its slice has passed', async () => {
  const between = turnsEvery(200);
  expect(await gaveATurn(between)).toBe(false); // cheap pieces do not each wait a turn
  busy(210);
  expect(await gaveATurn(between)).toBe(true);
  expect(await gaveATurn(between)).toBe(false); // a new slice from that turn
});

it('lets one piece of long work through per turn, however many are waiting', async () => {
  const log: string[] = [];
  let probing = true;
  const probe = () => {
    log.push('turn');
    if (probing) setImmediate(probe);
  };
  setImmediate(probe);
  const work = async (name: string) => {
    const between = turnsEvery(0); // every piece waits for a turn
    for (let piece = 0; piece < 4; piece++) {
      await between();
      log.push(name);
    }
  };
  await Promise.all(['a', 'b', 'c', 'd', 'e'].map(work));
  probing = false;

  expect(log.filter((entry) => entry !== 'turn')).toHaveLength(20); // every piece ran
  const runs = log
    .join(' ')
    .split('turn')
    .map((between) => between.trim().split(' ').filter(Boolean).length);
  expect(Math.max(...runs)).toBe(1); // before: all five pieces in each turn
});
