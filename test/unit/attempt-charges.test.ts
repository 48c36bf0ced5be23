import {
  failedAttemptCharge,
  reservationCharge,
  streamedCharge,
} from '../../domain/invocations/attempt-charges';
import { ProviderError } from '../../domain/providers';
import { invocationRow } from '../support/invocation-row';

const invocation = invocationRow({
  status: 'running',
  request: { messages: [{ role: 'user', content: 'weather in Oslo?' }], maxTokens: 1000 },
});

describe('the charge of a stream cut off without its usage', () => {
  it('counts a token per byte of the text that arrived', () => {
    const charge = streamedCharge(invocation, { content: 'Let me', toolCallText: '', usage: null });
    expect(charge.usage?.outputTokens).toBe(6);
  });

  it("counts the tool calls' names and arguments that arrived too, so a cut tool call is not free", () => {
    const text = streamedCharge(invocation, { content: 'Let me', toolCallText: '', usage: null });
    const withCall = streamedCharge(invocation, {
      content: 'Let me',
      toolCallText: 'get_weather{"city":',
      usage: null,
    });
    expect(withCall.usage?.outputTokens).toBe(6 + 19);
    expect(withCall.amounts.costMicros).toBeGreaterThan(text.amounts.costMicros);
  });

  it('takes the usage the provider reported over the bound', () => {
    const charge = streamedCharge(invocation, {
      content: 'Let me',
      toolCallText: 'get_weather{"city":',
      usage: { inputTokens: 5, outputTokens: 3 },
    });
    expect(charge.usage).toEqual({ inputTokens: 5, outputTokens: 3 });
    expect(charge).not.toHaveProperty('reported');
  });

  it('charges reported usage past the request’s bounds at the bounds, and keeps what was reported', () => {
    const reported = { inputTokens: 1_000_000, outputTokens: 1_000_000 };
    const charge = streamedCharge(invocation, { content: 'Let me', toolCallText: '', usage: reported });
    expect(charge.usage?.outputTokens).toBe(1000);
    expect(charge.usage?.inputTokens).toBeLessThan(1000);
    expect(charge.reported).toEqual(reported);
  });
});

describe('the charge of a stream that broke before anything arrived', () => {
  const broken = (streamed: { content: string; toolCallText: string; usage: null }) =>
    new ProviderError('retryable', 'provider_connection_lost', 'broke', null, null, 'unknown', streamed);

  it('is the reservation, as for any call whose outcome is unknown: nothing tells what the provider used', () => {
    const nothing = failedAttemptCharge(invocation, broken({ content: '', toolCallText: '', usage: null }));
    expect(nothing).toEqual(reservationCharge(invocation));
    const some = failedAttemptCharge(
      invocation,
      broken({ content: 'Let me', toolCallText: '', usage: null }),
    );
    expect(some.usage?.outputTokens).toBe(6);
  });
});
