import type { ServerResponse } from 'node:http';
import OpenAI from 'openai';
import { approverKeys, requireApproval, vote } from '../support/approval-fixtures';
import { mintKey } from '../support/factories';
import {
  eventually,
  finished,
  openSession,
  setUpInvoking,
  type InvokeSetup,
} from '../support/invoke-fixtures';
import { openaiClient } from '../support/openai-sdk';
import { StubProvider, type RecordedRequest } from '../support/stub-provider';
import { startTestApp, type TestApp } from '../support/test-app';

/**
 * Streams a provider or a client can hurt: a flood of tiny pieces, a stream that breaks after
 * pieces went out, a client that hangs up before the first piece or while its call waits, and a
 * second request that resumes a stream and hangs up.
 */
let app: TestApp;
let stub: StubProvider;
let setup: InvokeSetup;
let key: string;
/** Markers whose provider request saw its connection closed before it was answered. */
const cutOff = new Set<string>();

const write = (res: ServerResponse, body: unknown) => res.write(`data: ${JSON.stringify(body)}\n\n`);
const piece = (content: string) => ({ choices: [{ index: 0, delta: { content } }] });
const end = (res: ServerResponse, completionTokens: number) => {
  write(res, { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
  write(res, { choices: [], usage: { prompt_tokens: 10, completion_tokens: completionTokens } });
  res.end('data: [DONE]\n\n');
};

/** A whole chat completion, as a gateway that ignores `stream` answers; without usage, unreadable. */
const wholeAnswer = (res: ServerResponse, readable: boolean, content = 'hi'): void =>
  void res.writeHead(200, { 'content-type': 'application/json' }).end(
    JSON.stringify({
      choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
      ...(readable ? { usage: { prompt_tokens: 10, completion_tokens: 5 } } : {}),
    }),
  );
/** Larger than half the unread limit: counted twice, it once passed for a client gone. */
const LARGE = 'y'.repeat(3 * 1024 * 1024);

/** The stub's answer, chosen by the marker the prompt starts with. */
function answer(req: RecordedRequest, res: ServerResponse): void {
  const prompt = (req.body as { messages: { content: string }[] }).messages[0]?.content ?? '';
  const marker = prompt.split(' ')[0] ?? '';
  res.on('close', () => {
    if (!res.writableFinished) cutOff.add(marker);
  });
  if (marker.startsWith('never')) return; // accepted, never answered
  if (marker.startsWith('whole')) return wholeAnswer(res, true);
  if (marker.startsWith('large')) return wholeAnswer(res, true, LARGE);
  if (marker.startsWith('unusage')) return wholeAnswer(res, false);
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  if (marker.startsWith('flood')) {
    for (let i = 0; i < 20_000; i++) write(res, piece('x'));
    return end(res, 16);
  }
  if (marker.startsWith('unstorable')) {
    // NUL and lone surrogates, and an emoji's surrogate pair split between two pieces.
    for (const content of ['a\u0000b', '\ud800c', '\ud83d', '\ude00']) write(res, piece(content));
    const call = {
      index: 0,
      id: 'c\u0000',
      type: 'function',
      function: { name: 'f\ud800', arguments: '{"a":"\u0000' },
    };
    write(res, { choices: [{ index: 0, delta: { tool_calls: [call] } }] });
    write(res, {
      choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '\udc00"}' } }] } }],
    });
    return end(res, 8);
  }
  if (marker.startsWith('broken')) {
    write(res, piece('first '));
    write(res, piece('second '));
    return void setTimeout(() => res.socket?.destroy(), 200);
  }
  // A word every 50 ms, twenty of them.
  let n = 0;
  const timer = setInterval(() => {
    if (n < 20) return void write(res, piece(`w${n++} `));
    clearInterval(timer);
    end(res, 20);
  }, 50);
  res.on('close', () => clearInterval(timer));
}

beforeAll(async () => {
  stub = await new StubProvider().start();
  stub.handler = answer;
  app = await startTestApp({ workers: true, env: { CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true' } });
  setup = await setUpInvoking(app.http, { baseUrl: stub.url, models: ['stub-model', 'gated-model'] });
  key = (await mintKey(app.http, setup.org.adminKey, ['invoke'])).key;
}, 60_000);
afterAll(async () => {
  await app.close();
  await stub.stop();
});

const sentWith = (marker: string) =>
  stub.requests.filter((r) => JSON.stringify(r.body).includes(`"${marker} `)).length;

async function session() {
  return openSession(app.http, setup.org.adminKey, { agent_id: setup.agentId, max_cost_usd: 1 });
}

/** The approval the session's one invocation waits for. */
const pendingApproval = (sessionId: string) =>
  eventually(async () => {
    const res = await app.http.get<{ data: { id: string; invocation_id: string }[] }>(
      `/v1/approvals?status=pending&session_id=${sessionId}`,
      setup.org.adminKey,
    );
    return res.body.data[0];
  });

const clientFor = (sessionId: string, headers: Record<string, string> = {}) =>
  openaiClient(app.http.baseUrl, key, { 'X-Session-Id': sessionId, ...headers });

const ask = (marker: string, model = 'stub-model') => ({
  model,
  messages: [{ role: 'user' as const, content: `${marker} go` }],
  max_tokens: 1000,
  stream: true as const,
});

/** Reads a stream to its end: the text, the events, and the error it ended with, if any. */
async function read(stream: AsyncIterable<OpenAI.ChatCompletionChunk>) {
  let text = '';
  let events = 0;
  try {
    for await (const chunk of stream) {
      events++;
      text += chunk.choices[0]?.delta.content ?? '';
    }
    return { text, events, error: null };
  } catch (err) {
    return { text, events, error: err };
  }
}

it('gathers a flood of one-letter pieces into a few events: the whole answer, a bounded number of messages', async () => {
  const { id } = await session();
  const { text, events, error } = await read(await clientFor(id).chat.completions.create(ask('flood')));
  expect(error).toBeNull();
  expect(text).toBe('x'.repeat(20_000));
  // One event per piece before (20,000); now one per 20 ms of the stream at most.
  expect(events).toBeLessThan(200);
});

it('streams an answer holding NUL and lone surrogates as it is stored, U+FFFD for each, pairs kept whole (QA)', async () => {
  const { id } = await session();
  const { data: stream, response } = await clientFor(id)
    .chat.completions.create(ask('unstorable'))
    .withResponse();
  let content = '';
  const call = { id: '', name: '', arguments: '' };
  for await (const chunk of stream) {
    const delta = chunk.choices[0]?.delta;
    content += delta?.content ?? '';
    const piece = delta?.tool_calls?.[0];
    call.id += piece?.id ?? '';
    call.name += piece?.function?.name ?? '';
    call.arguments += piece?.function?.arguments ?? '';
  }
  expect(content).toBe('a\ufffdb\ufffdc\u{1f600}');
  expect(call).toEqual({ id: 'c\ufffd', name: 'f\ufffd', arguments: '{"a":"\ufffd\ufffd"}' });
  // What the client got is what was recorded: a tool call id it can send back on its next turn.
  const done = await finished(app.http, key, response.headers.get('x-invocation-id') as string);
  expect(done.output).toMatchObject({
    content,
    tool_calls: [{ id: call.id, function: { name: call.name, arguments: call.arguments } }],
  });
});

it('does not try a stream again once its pieces reached the client: it ends with an error, one provider call', async () => {
  const { id } = await session();
  const { data: stream, response } = await clientFor(id)
    .chat.completions.create(ask('broken'))
    .withResponse();
  const { text, error } = await read(stream);
  expect(text).toBe('first second ');
  expect(error).toBeInstanceOf(OpenAI.APIError);
  const done = await finished(app.http, key, response.headers.get('x-invocation-id') as string);
  expect(done).toMatchObject({ status: 'failed', error: { error_code: 'provider_connection_lost' } });
  expect(sentWith('broken')).toBe(1);
  // Charged what arrived (one token per byte at most), not the 1000-token reservation.
  expect(done.usage?.output_tokens).toBeLessThan(100);
});

it('a whole JSON completion answering a stream (a gateway that ignores stream) is streamed on and charged as used', async () => {
  const { id } = await session();
  const stream = await clientFor(id).chat.completions.create(ask('whole')).withResponse();
  expect(await read(stream.data)).toMatchObject({ text: 'hi', error: null });
  const done = await finished(app.http, key, stream.response.headers.get('x-invocation-id') as string);
  expect(done).toMatchObject({ status: 'succeeded', usage: { input_tokens: 10, output_tokens: 5 } });
  expect(sentWith('whole')).toBe(1);
});

it('streams a whole answer of 3 MiB in one piece to a client that reads it', async () => {
  const { id } = await session();
  const large = await read(await clientFor(id).chat.completions.create(ask('large')));
  expect(large.error).toBeNull();
  expect(large.text.length).toBe(LARGE.length);
});

it('a whole JSON answer to a stream that cannot be read is not taken for a lost connection: one provider call, no retry', async () => {
  const { id } = await session();
  const refused = await clientFor(id)
    .chat.completions.create(ask('unusage'))
    .catch((err: unknown) => err);
  // Nothing had gone to the client, so the failure is the answer's status.
  expect(refused).toMatchObject({ status: 502, code: 'provider_bad_response' });
  const invocationId = (refused as InstanceType<typeof OpenAI.APIError>).headers?.get('x-invocation-id');
  const done = await finished(app.http, key, invocationId as string);
  expect(done).toMatchObject({ status: 'failed', error: { error_code: 'provider_bad_response' } });
  expect(sentWith('unusage')).toBe(1);
  // An answer that could not be read may still be billed: one call, at the reservation.
  expect(done.usage?.output_tokens).toBe(1000);
});

it('a client that hangs up before the first piece stops the provider call, which is charged as unknown', async () => {
  const { id } = await session();
  const hangUp = new AbortController();
  setTimeout(() => hangUp.abort(), 500);
  const refused = await clientFor(id)
    .chat.completions.create(ask('never-1'), { signal: hangUp.signal })
    .catch((err: unknown) => err);
  expect(refused).toBeInstanceOf(OpenAI.APIUserAbortError);
  await eventually(() => cutOff.has('never-1'), 10_000);
  const listed = await app.http.get<{ data: { id: string }[] }>(
    `/v1/llm/invocations?session_id=${id}`,
    setup.org.adminKey,
  );
  const done = await finished(app.http, key, listed.body.data[0]?.id as string);
  expect(done).toMatchObject({ status: 'failed', error: { error_code: 'provider_aborted' } });
  expect(sentWith('never-1')).toBe(1);
  // Nothing arrived, so nothing says what the provider used: the reservation (max_tokens out).
  expect(done.usage?.output_tokens).toBe(1000);
});

it('a client that hangs up while its call waits for approval leaves it to the approvers; a resume streams it piece by piece', async () => {
  await requireApproval(app.http, setup.org.adminKey, { model: 'gated-model' });
  const [approver] = await approverKeys(app.http, setup.org.adminKey, 1);
  const { id } = await session();
  const hangUp = new AbortController();
  const asked = clientFor(id)
    .chat.completions.create(ask('slow-gated', 'gated-model'), { signal: hangUp.signal })
    .catch((err: unknown) => err);
  const approval = await pendingApproval(id);
  hangUp.abort();
  expect(await asked).toBeInstanceOf(OpenAI.APIUserAbortError);
  await new Promise((r) => setTimeout(r, 200)); // the hang-up reaches the API
  // The client comes back for it before anyone votes: nothing of the answer has gone out yet.
  const resumed = clientFor(id, { 'X-Invocation-Id': approval.invocation_id })
    .chat.completions.create(ask('slow-gated', 'gated-model'))
    .then(read);
  await new Promise((r) => setTimeout(r, 200));
  expect((await vote(app.http, approver as string, approval.id, 'approve')).body.status).toBe('approved');
  const { text, events, error } = await resumed;
  expect(error).toBeNull();
  expect(text).toBe(Array.from({ length: 20 }, (_, i) => `w${i} `).join(''));
  expect(events).toBeGreaterThanOrEqual(20); // a word every 50 ms: streamed, not whole at the end
  expect(sentWith('slow-gated')).toBe(1);
});

it('a call whose client hung up before it began is not made, nor charged', async () => {
  const { id } = await session();
  const asked = clientFor(id)
    .chat.completions.create(ask('never-2', 'gated-model'))
    .catch((err: unknown) => err);
  const approval = await pendingApproval(id);
  // What the API leaves when a client hangs up while its call is queued.
  await app.infra.completions.abort(approval.invocation_id, true);
  const [approver] = await approverKeys(app.http, setup.org.adminKey, 1);
  expect((await vote(app.http, approver as string, approval.id, 'approve')).body.status).toBe('approved');
  const done = await finished(app.http, key, approval.invocation_id);
  expect(done).toMatchObject({ status: 'failed', error: { error_code: 'provider_aborted' }, cost_usd: 0 });
  expect(sentWith('never-2')).toBe(0);
  expect(await asked).toBeInstanceOf(OpenAI.APIError);
});

it('a failed read of the hang-up mark does not stop the call (it is read after the reservation)', async () => {
  const { id } = await session();
  const hungUp = jest
    .spyOn(app.infra.completions, 'hungUp')
    .mockRejectedValueOnce(new Error('Command timed out'));
  try {
    const { data: stream, response } = await clientFor(id)
      .chat.completions.create(ask('slow'))
      .withResponse();
    expect((await read(stream)).error).toBeNull();
    const done = await finished(app.http, key, response.headers.get('x-invocation-id') as string);
    expect(done).toMatchObject({ status: 'succeeded', usage: { output_tokens: 20 } });
    expect(hungUp).toHaveBeenCalled();
  } finally {
    hungUp.mockRestore();
  }
});

it('a request that resumes a running stream only watches: its hang-up stops nothing, and it gets the whole answer', async () => {
  const { id } = await session();
  const { data: stream, response } = await clientFor(id).chat.completions.create(ask('slow')).withResponse();
  const invocationId = response.headers.get('x-invocation-id') as string;
  const original = read(stream);
  const resume = (signal?: AbortSignal) =>
    clientFor(id, { 'X-Invocation-Id': invocationId }).chat.completions.create(ask('slow'), { signal });
  const quitter = new AbortController();
  setTimeout(() => quitter.abort(), 300);
  const quit = resume(quitter.signal).then(read, (err: unknown) => err);
  const watcher = read(await resume());
  expect(await quit).toBeInstanceOf(OpenAI.APIUserAbortError);
  const whole = Array.from({ length: 20 }, (_, i) => `w${i} `).join('');
  expect(await original).toMatchObject({ text: whole, error: null });
  expect(await watcher).toMatchObject({ text: whole, error: null });
  expect((await finished(app.http, key, invocationId)).status).toBe('succeeded');
  expect(cutOff.has('slow')).toBe(false);
});
