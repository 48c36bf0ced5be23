import type { Knex } from '@mikro-orm/knex';
import { QUEUES } from '../../domain/jobs';
import type { JobQueues } from '../queue/job-queues';

/** The job states /metrics reports for every queue. */
export const QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed', 'completed'] as const;

export interface QueueJobCount {
  queue: string;
  state: string;
  count: number;
}

/** What /metrics reads from the stores when it is scraped. */
export interface ScrapeSources {
  queueJobs(): Promise<QueueJobCount[]>;
  reservationsOutstanding(): Promise<number>;
  auditBacklog(): Promise<number>;
}

/** A scrape must answer while Redis or PostgreSQL is down: each read gives up after this. */
const SCRAPE_TIMEOUT_MS = 1_000;

const within = <T>(promise: Promise<T>, what: string): Promise<T> =>
  Promise.race([
    promise,
    new Promise<T>((_, reject) =>
      setTimeout(() => reject(new Error(`${what} did not answer in time`)), SCRAPE_TIMEOUT_MS).unref(),
    ),
  ]);

async function queueJobs(queues: JobQueues): Promise<QueueJobCount[]> {
  const perQueue = await Promise.all(
    Object.values(QUEUES).map(async (queue) => {
      const counts = await queues.queue(queue).getJobCounts(...QUEUE_STATES);
      return QUEUE_STATES.map((state) => ({ queue, state, count: counts[state] ?? 0 }));
    }),
  );
  return perQueue.flat();
}

/**
 * Sealing moves outbox events into the chain and signs the new head in one transaction, so the
 * outbox is exactly what no signed checkpoint covers yet. It is drained every few seconds: small.
 */
async function auditBacklog(knex: Knex): Promise<number> {
  const { rows } = await knex
    .raw<{ rows: { n: number }[] }>('select count(*)::int as n from audit_outbox')
    .timeout(SCRAPE_TIMEOUT_MS, { cancel: true });
  return rows[0]?.n ?? 0;
}

export function storeSources(deps: {
  queues: JobQueues;
  ledger: { outstanding(): Promise<number> };
  knex: Knex;
}): ScrapeSources {
  return {
    queueJobs: () => within(queueJobs(deps.queues), 'BullMQ'),
    reservationsOutstanding: () => within(deps.ledger.outstanding(), 'the cap ledger'),
    auditBacklog: () => within(auditBacklog(deps.knex), 'PostgreSQL'),
  };
}
