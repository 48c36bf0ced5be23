import type { Invocation } from '../../domain/invocations/invocation';
import type { InvocationStore, WriteOutcome } from '../../domain/invocations/invocation-store';
import { AfterRecording, outcomeWrite, recordOutcome } from '../../domain/invocations/outcomes';
import type { CompletionSignal } from '../../domain/invocations/signals';
import { invocationRow } from '../support/invocation-row';

const now = new Date('2026-11-24T12:00:00Z');

const invocation: Invocation = invocationRow({ status: 'running', createdAt: now });

const charge = {
  amounts: { costMicros: 7, calls: 1, tokens: 5 },
  usage: { inputTokens: 2, outputTokens: 3 },
};

const write = (status: 'succeeded' | 'running') =>
  outcomeWrite(invocation, { from: ['running'], status, error: null, charge, providerAttempt: 1 }, now);

/** A store whose FINISH answers `written`, and a signal and settle that log when they are sent. */
function fakes(written: WriteOutcome = 'applied') {
  const sent: string[] = [];
  let settleDone: (err?: Error) => void = () => undefined;
  const settle = () => {
    sent.push('settle');
    return new Promise<void>((resolve, reject) => {
      settleDone = (err) => (err ? reject(err) : resolve());
    });
  };
  const signal: CompletionSignal = { finished: async (i) => void sent.push(`signal ${i.status}`) };
  const store = { finish: async () => written } as unknown as InvocationStore;
  return { deps: { store, signal }, settle, sent, settleDone: (err?: Error) => settleDone(err) };
}

/** Lets every ready promise callback run. */
const settleTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('recording an outcome', () => {
  it('sends the settle and then the signal before either answers: one Redis round trip, settle first', async () => {
    const { deps, settle, sent, settleDone } = fakes();
    const recorded = recordOutcome(deps, invocation, write('succeeded'), settle);
    await settleTurn();
    expect(sent).toEqual(['settle', 'signal succeeded']);
    settleDone();
    await expect(recorded).resolves.toBe('applied');
  });

  it('still tells the client of an end PostgreSQL holds when the settle fails, and fails the job', async () => {
    const { deps, settle, sent, settleDone } = fakes();
    const recorded = recordOutcome(deps, invocation, write('succeeded'), settle);
    await settleTurn();
    settleDone(new Error('redis said no'));
    await expect(recorded).rejects.toThrow('redis said no');
    // Told apart from a write that failed: the outcome is recorded.
    await expect(recorded).rejects.toBeInstanceOf(AfterRecording);
    await expect(recorded).rejects.toMatchObject({ step: 'settling its charge in the cap ledger' });
    expect(sent).toEqual(['settle', 'signal succeeded']);
  });

  it('settles a failed attempt a retry follows without telling anyone it ended', async () => {
    const { deps, settle, sent, settleDone } = fakes();
    const recorded = recordOutcome(deps, invocation, write('running'), settle);
    await settleTurn();
    settleDone();
    await expect(recorded).resolves.toBe('applied');
    expect(sent).toEqual(['settle']);
  });

  it('neither settles nor signals a write that did not apply', async () => {
    const { deps, settle, sent } = fakes('skipped');
    await expect(recordOutcome(deps, invocation, write('succeeded'), settle)).resolves.toBe('skipped');
    expect(sent).toEqual([]);
  });
});
