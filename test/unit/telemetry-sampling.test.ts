import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { addSpanProcessor, installTelemetry, startSpan } from '../../infra/telemetry';

/**
 * A span nothing receives is not recorded, yet its trace still reaches the next hop; once a
 * processor receives spans (an exporter, a test), they are recorded as the SDK's default does.
 * One file: the processors added stay for the module's life.
 */
const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const caller = { traceparent: `00-${TRACE_ID}-b7ad6b7169203331-01` };
const TRACEPARENT = new RegExp(`^00-${TRACE_ID}-([0-9a-f]{16})-(0[01])$`);

beforeAll(() => installTelemetry({ serviceName: 'telemetry-sampling-test' }));

it('with no processor, records nothing and still hands the trace on under a span id of its own', () => {
  const traced = startSpan('GET /v1/x', 'server', caller, { 'http.request.method': 'GET' });
  expect(traced.span.isRecording()).toBe(false);
  const [, spanId, flags] = TRACEPARENT.exec(traced.carrier.traceparent ?? '') ?? [];
  expect(spanId).toBeDefined();
  expect(spanId).not.toBe('b7ad6b7169203331');
  expect(flags).toBe('00');
  // A new trace when the caller sent none.
  expect(startSpan('job', 'consumer', {}).carrier.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
  traced.end();
});

it('with a processor, records spans under a sampled parent, and not under an unsampled one', () => {
  const spans = new InMemorySpanExporter();
  addSpanProcessor(new SimpleSpanProcessor(spans));
  const traced = startSpan('GET /v1/x', 'server', caller);
  expect(traced.span.isRecording()).toBe(true);
  expect(traced.carrier.traceparent).toMatch(TRACEPARENT);
  expect(traced.carrier.traceparent?.endsWith('-01')).toBe(true);
  traced.end();
  expect(spans.getFinishedSpans().map((s) => s.name)).toEqual(['GET /v1/x']);

  const unsampled = startSpan('GET /v1/y', 'server', { traceparent: `00-${TRACE_ID}-b7ad6b7169203331-00` });
  expect(unsampled.span.isRecording()).toBe(false);
  unsampled.end();
  expect(spans.getFinishedSpans()).toHaveLength(1);
});
