import { randomBytes } from 'node:crypto';
import type Redis from 'ioredis';
import type { Invocation, InvocationSummary } from '../../domain/invocations/invocation';
import type { WaitResult } from '../../domain/invocations/signals';
import type { StreamDelta } from '../../domain/providers';
import { CompletionHub } from '../../infra/invocations/completion-hub';
import { createLogger } from '../../infra/logger';
import { openRedis } from '../../infra/redis/connections';
import { invocationRow } from '../support/invocation-row';
import { deleteKeysWithPrefix } from '../support/redis-keys';
import { TEST_REDIS_URL } from '../support/test-db';

const logger = createLogger('silent');
const prefix = `cpt_${randomBytes(5).toString('hex')}`;
let publisher: Redis;
const hubs: CompletionHub[] = [];
const hub = (): CompletionHub => {
  const made = new CompletionHub(publisher, TEST_REDIS_URL, prefix, logger);
  hubs.push(made);
  return made;
};

const finishedInvocation = () =>
  invocationRow({
    id: `inv_${randomBytes(8).toString('hex')}`,
    status: 'succeeded',
    completedAt: new Date('2026-11-27T04:00:00.123Z'),
  });

const text = (content: string): StreamDelta => ({ content });

/** What another process receives: the invocation without its request. */
const summaryOf = ({ request: _request, ...summary }: Invocation): InvocationSummary => summary;

/**
 * Everything a hub published before this returns has reached `listener`'s subscription: Redis
 * delivers one channel's messages in the order it took them, and `sender` sends after them.
 */
async function drained(listener: CompletionHub, sender: CompletionHub): Promise<void> {
  const marker = `inv_marker_${randomBytes(4).toString('hex')}`;
  const waiting = listener.wait(marker, 5_000);
  await sender.announce(marker);
  expect(await waiting.result).toEqual({ kind: 'finished', invocation: null });
}

/**
 * What a waiter was answered with by the time the microtasks queued so far have run: no I/O runs
 * in between, so nothing published can have come back through Redis yet.
 */
async function answeredWithoutIo(waiting: { result: Promise<WaitResult> }): Promise<WaitResult | undefined> {
  let answer: WaitResult | undefined;
  void waiting.result.then((result) => (answer = result));
  await Promise.resolve();
  await Promise.resolve();
  return answer;
}

beforeAll(async () => {
  publisher = await openRedis(TEST_REDIS_URL);
});

afterAll(async () => {
  await Promise.all(hubs.map((h) => h.close()));
  await deleteKeysWithPrefix(publisher, prefix);
  publisher.disconnect();
});

describe('completion hub, API and worker in one process (--role all)', () => {
  it('answers a waiter in the same process with the finished invocation itself, before Redis could', async () => {
    const inProcess = hub();
    await inProcess.listen();
    const invocation = finishedInvocation();
    const waiting = inProcess.wait(invocation.id, 3_000);

    const publishing = inProcess.finished(invocation);
    const answer = await answeredWithoutIo(waiting);

    expect(answer).toEqual({ kind: 'finished', invocation });
    expect(answer?.kind === 'finished' && answer.invocation).toBe(invocation);
    expect(inProcess.waiting).toBe(0);
    await publishing;
  });

  it('wakes a waiter in the same process on an announcement, with no payload, before Redis could', async () => {
    const inProcess = hub();
    await inProcess.listen();
    const waiting = inProcess.wait('evl_local', 3_000);

    const publishing = inProcess.announce('evl_local');

    expect(await answeredWithoutIo(waiting)).toEqual({ kind: 'finished', invocation: null });
    await publishing;
  });

  it('hands each piece once, in order, to followers here and in another process', async () => {
    const [here, elsewhere] = [hub(), hub()];
    await Promise.all([here.listen(), elsewhere.listen()]);
    const invocation = finishedInvocation();
    const seenHere: string[] = [];
    const seenElsewhere: string[] = [];
    const followingHere = here.follow(invocation.id, (d) => seenHere.push(d.content ?? ''), 5_000);
    const followingElsewhere = elsewhere.follow(
      invocation.id,
      (d) => seenElsewhere.push(d.content ?? ''),
      5_000,
    );

    for (const piece of ['one', 'two', 'three']) here.piece(invocation.id, text(piece));
    await drained(here, elsewhere); // the echoes of its own pieces reach this hub mid-stream
    await drained(elsewhere, here);
    expect(seenHere).toEqual(['one', 'two', 'three']);
    expect(seenElsewhere).toEqual(['one', 'two', 'three']);
    await here.finished(invocation);

    expect(await followingHere.result).toEqual({ kind: 'finished', invocation });
    // Through Redis: the invocation as JSON less its request, its dates revived.
    expect(await followingElsewhere.result).toEqual({ kind: 'finished', invocation: summaryOf(invocation) });
  });

  it('drops the echo of its own pieces unparsed, where another process parses each once', async () => {
    const [here, elsewhere] = [hub(), hub()];
    await Promise.all([here.listen(), elsewhere.listen()]);
    const invocation = finishedInvocation();
    const seen: string[] = [];
    here.follow(invocation.id, (d) => seen.push(d.content ?? ''), 5_000);
    elsewhere.follow(invocation.id, (d) => seen.push(d.content ?? ''), 5_000);
    const parse = jest.spyOn(JSON, 'parse');
    try {
      here.piece(invocation.id, text('x'.repeat(16_000)));
      await drained(here, elsewhere);
      await drained(elsewhere, here);
      const piecesParsed = parse.mock.calls.filter(([json]) => String(json).includes('"piece"'));
      expect(piecesParsed).toHaveLength(1); // elsewhere's; this hub's echo was never parsed
    } finally {
      parse.mockRestore();
    }
    expect(seen).toHaveLength(2);
    await here.finished(invocation);
  });

  it("keeps a follower's failure away from the worker's stream", async () => {
    const [here, elsewhere] = [hub(), hub()];
    await Promise.all([here.listen(), elsewhere.listen()]);
    const invocation = finishedInvocation();
    const throwing = here.follow(
      invocation.id,
      () => {
        throw new Error('the client went away');
      },
      5_000,
    );
    const seenElsewhere: string[] = [];
    const following = elsewhere.follow(invocation.id, (d) => seenElsewhere.push(d.content ?? ''), 5_000);

    expect(() => here.piece(invocation.id, text('one'))).not.toThrow();
    await here.finished(invocation);

    expect(await throwing.result).toEqual({ kind: 'finished', invocation });
    expect(await following.result).toEqual({ kind: 'finished', invocation: summaryOf(invocation) });
    expect(seenElsewhere).toEqual(['one']);
  });
});

describe('completion hub, the finished message', () => {
  it('leaves the request out, so an invocation with a prompt past the size limit still travels whole', async () => {
    const [worker, api] = [hub(), hub()];
    await api.listen();
    const prompt = 'x'.repeat(200 * 1024); // the message's limit is 64 KiB
    const invocation = {
      ...finishedInvocation(),
      request: { messages: [{ role: 'user' as const, content: prompt }], maxTokens: 10 },
      output: { role: 'assistant' as const, content: 'ok' },
    };
    const waiting = api.wait(invocation.id, 5_000);

    await worker.finished(invocation);

    const result = await waiting.result;
    expect(result).toEqual({ kind: 'finished', invocation: summaryOf(invocation) });
    expect(result.kind === 'finished' && result.invocation).not.toHaveProperty('request');
  });
});
