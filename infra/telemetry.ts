import {
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Span,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  SamplingDecision,
  type ReadableSpan,
  type Sampler,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';

export type TraceCarrier = Record<string, string>;

/** Fans finished spans out to processors added at any time (tests add an in-memory one). */
class SpanFanOut implements SpanProcessor {
  readonly processors: SpanProcessor[] = [];
  onStart(): void {}
  onEnd(span: ReadableSpan): void {
    for (const p of this.processors) p.onEnd(span);
  }
  async forceFlush(): Promise<void> {
    await Promise.all(this.processors.map((p) => p.forceFlush()));
  }
  async shutdown(): Promise<void> {
    await Promise.all(this.processors.map((p) => p.shutdown()));
  }
}

const fanOut = new SpanFanOut();
let installed = false;

/**
 * Spans are recorded only while something receives them (an exporter, a test's processor), as the
 * SDK's default sampler decides. Otherwise a span is its context alone: still propagated to the
 * jobs and the providers (not sampled, as it is not), without the attributes, timings and ending
 * nothing would read (2.4% of the API's CPU per invoke, `npm run bench:ab`, 3 pairs).
 */
class WhileReceived implements Sampler {
  private readonly recording = new ParentBasedSampler({ root: new AlwaysOnSampler() });

  shouldSample(...args: Parameters<Sampler['shouldSample']>) {
    if (fanOut.processors.length === 0) return { decision: SamplingDecision.NOT_RECORD };
    return this.recording.shouldSample(...args);
  }

  toString(): string {
    return 'WhileReceived';
  }
}

/**
 * Installs the tracer provider and the W3C trace-context propagator, once per process. Spans are
 * exported over OTLP/HTTP when an endpoint is configured (OTEL_EXPORTER_OTLP_ENDPOINT), else not
 * recorded (WhileReceived): trace context is still propagated to the jobs and to the providers.
 */
export function installTelemetry(options: { serviceName: string; otlpEndpoint?: string | undefined }): void {
  if (installed) return;
  installed = true;
  if (options.otlpEndpoint) {
    const url = `${options.otlpEndpoint.replace(/\/+$/, '')}/v1/traces`;
    fanOut.processors.push(new BatchSpanProcessor(new OTLPTraceExporter({ url })));
  }
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': options.serviceName }),
    spanProcessors: [fanOut],
    sampler: new WhileReceived(),
  });
  trace.setGlobalTracerProvider(provider);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
}

/** For tests: receive every span this process ends. */
export const addSpanProcessor = (processor: SpanProcessor): void => void fanOut.processors.push(processor);

export const flushTelemetry = (): Promise<void> => fanOut.forceFlush();

/** A span of ours, with the carrier that makes the next hop its child. */
export interface TracedSpan {
  span: Span;
  /** traceparent (and tracestate) of this span. */
  carrier: TraceCarrier;
  end(error?: unknown): void;
}

const tracer = () => trace.getTracer('control-plane');

/** Starts a span under the context a carrier (HTTP headers, a job payload) holds; a new trace if none. */
export function startSpan(
  name: string,
  kind: 'server' | 'consumer' | 'client' | 'internal',
  parent: TraceCarrier | Record<string, string | string[] | undefined>,
  attributes: Attributes = {},
): TracedSpan {
  const parentContext = propagation.extract(ROOT_CONTEXT, parent);
  const span = tracer().startSpan(
    name,
    {
      kind: {
        server: SpanKind.SERVER,
        consumer: SpanKind.CONSUMER,
        client: SpanKind.CLIENT,
        internal: SpanKind.INTERNAL,
      }[kind],
      attributes,
    },
    parentContext,
  );
  const carrier: TraceCarrier = {};
  propagation.inject(trace.setSpan(ROOT_CONTEXT, span), carrier);
  return {
    span,
    carrier,
    end: (error?: unknown) => {
      if (error) {
        span.setStatus({
          code: SpanStatusCode.ERROR,
          message: error instanceof Error ? error.message : String(error),
        });
      }
      span.end();
    },
  };
}

/** Runs `work` inside a span: ended when it settles, marked as an error when it throws. */
export async function inSpan<T>(
  name: string,
  kind: 'server' | 'consumer' | 'client' | 'internal',
  parent: TraceCarrier,
  work: (span: TracedSpan) => Promise<T>,
  attributes: Attributes = {},
): Promise<T> {
  const traced = startSpan(name, kind, parent, attributes);
  try {
    const result = await work(traced);
    traced.end();
    return result;
  } catch (err) {
    traced.end(err);
    throw err;
  }
}
