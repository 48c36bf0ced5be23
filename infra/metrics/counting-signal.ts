import type { CompletionSignal } from '../../domain/invocations/signals';
import type { Metrics } from './metrics';

/**
 * Every final status of an invocation is announced through this one signal, once (only by the
 * write that ended it), so it is where finished invocations and what they cost are counted.
 */
export const counting = (metrics: Metrics, signal: CompletionSignal): CompletionSignal => ({
  finished: async (invocation) => {
    metrics.invocationFinished(invocation.status, invocation.costMicros);
    await signal.finished(invocation);
  },
});
