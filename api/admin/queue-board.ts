import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { KoaAdapter } from '@bull-board/koa';
import type { Middleware } from 'koa';
import { QUEUES } from '../../domain/jobs';
import type { Infra } from '../../infra/container';
import { describeError } from '../../infra/logging/safe-error';

export const DASHBOARD_PATH = '/admin/queues';

const FRAME = /^\s+at /;

/**
 * A failed job's reason and stack as a log line would tell them (infra/logging/safe-error.ts): a
 * database error's message holds the SQL's values, so a leading statement is withheld, and of a
 * stack only the frames are kept. Job data needs nothing: payloads are ids (domain/jobs.ts).
 */
function scrubFailure(job: Record<string, unknown>): void {
  if (typeof job.failedReason === 'string')
    job.failedReason = describeError(new Error(job.failedReason)).message;
  if (Array.isArray(job.stacktrace))
    job.stacktrace = job.stacktrace.map((stack: unknown) =>
      String(stack)
        .split('\n')
        .filter((line) => FRAME.test(line))
        .join('\n'),
    );
}

/** Every job in an answer (a queue's page, one job, a flow's tree) wherever it sits. */
function scrubFailures(value: unknown): void {
  if (Array.isArray(value)) return value.forEach(scrubFailures);
  if (!value || typeof value !== 'object') return;
  const record = value as Record<string, unknown>;
  if ('failedReason' in record) scrubFailure(record);
  Object.values(record).forEach(scrubFailures);
}

/**
 * bull-board over every queue of domain/jobs.ts, read-only: a write (retry, clean, pause, add)
 * answers 405, so the dashboard can look but never change what the workers do.
 */
export function queueBoard(infra: Infra): Middleware {
  const serverAdapter = new KoaAdapter().setBasePath(DASHBOARD_PATH);
  createBullBoard({
    queues: Object.values(QUEUES).map(
      (name) => new BullMQAdapter(infra.queues.queue(name), { readOnlyMode: true }),
    ),
    serverAdapter,
    options: {
      uiConfig: { boardTitle: 'control plane queues' },
      handlerHooks: {
        after: (_context, result) => {
          scrubFailures(result.body);
          return result;
        },
      },
    },
  });
  return serverAdapter.registerPlugin();
}
