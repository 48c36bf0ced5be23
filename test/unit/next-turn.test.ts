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
