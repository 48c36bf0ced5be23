import { createServer, type Server, type Socket } from 'node:net';
import { JobQueues } from '../../infra/queue/job-queues';

/**
 * A producer first used while Redis does not answer (here a server that accepts connections and
 * says nothing) used to wait for it for good: a governed invoke's request hung until Redis came
 * back (QA: 59 s). Now the add fails after REDIS_COMMAND_TIMEOUT_MS, and the submit answers 202
 * with its queued invocation for the reaper to run.
 */
let silent: Server;
const sockets = new Set<Socket>();

beforeAll(async () => {
  silent = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => silent.close(resolve));
});

it('fails a first add that Redis never answers within the command timeout', async () => {
  const { port } = silent.address() as { port: number };
  const queues = new JobQueues(`redis://127.0.0.1:${port}`, 'unreachable-test');
  const started = performance.now();
  const submit = queues.stages.submit({
    invocation_id: 'inv_unreachable',
    org_id: 'org_unreachable',
    trace: {},
  });
  await expect(submit).rejects.toThrow('Redis did not answer within 2000 ms');
  expect(performance.now() - started).toBeLessThan(5_000);
  await queues.close();
}, 15_000);
