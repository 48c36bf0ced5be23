/**
 * The process entry: `--role all` (API and workers, the quick start), `api` or `worker`.
 * Workers take `--queues a,b` to run only some queues.
 */
import { parseArgs } from 'node:util';
import { startApi } from './api/server';
import { QUEUES, type QueueName } from './domain/jobs';
import { ConfigError, loadConfig } from './infra/config';
import { createInfra } from './infra/container';
import { createLogger, type Logger } from './infra/logger';
import { resolveStores } from './infra/stores';
import { startMetricsServer } from './workers/metrics-server';
import { startWorkers } from './workers/start-workers';
import { startSyncRuns } from './workers/sync-runs';

type Role = 'all' | 'api' | 'worker';

function parseRole(): { role: Role; queues: QueueName[] } {
  const { values } = parseArgs({
    options: { role: { type: 'string', default: 'all' }, queues: { type: 'string' } },
  });
  const role = values.role as Role;
  if (!['all', 'api', 'worker'].includes(role))
    throw new ConfigError([`--role: must be all, api or worker (got ${role})`]);
  const known = Object.values(QUEUES) as string[];
  const queues = (values.queues?.split(',') ?? known).map((q) => q.trim());
  const unknown = queues.filter((q) => !known.includes(q));
  if (unknown.length)
    throw new ConfigError([`--queues: unknown ${unknown.join(', ')} (known: ${known.join(', ')})`]);
  return { role, queues: queues as QueueName[] };
}

async function main(): Promise<void> {
  const { role, queues } = parseRole();
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  const stores = await resolveStores(config, logger);
  const infra = await createInfra(config, stores.urls, logger);
  // Sync invokes in the API, unless CP_SYNC_INVOKES_IN_API=false: no queue hop for a waiting client.
  const syncRuns = role === 'worker' ? null : startSyncRuns(infra, true);
  // Ports first, jobs last: a start that fails (a port taken) must not have taken a job it then
  // abandons by exiting, which would end that invocation as a lost worker's.
  const api = role === 'worker' ? null : await startApi(infra);
  // With an API in the process, its /metrics covers the workers too.
  const metricsPort = role === 'worker' ? config.CP_WORKER_METRICS_PORT : undefined;
  const metricsServer = metricsPort ? await startMetricsServer(infra, metricsPort) : null;
  const workers = role === 'api' ? null : await startWorkers(infra, queues);
  logger.info(
    { role, url: api?.url, metrics_port: metricsServer?.port, pid: process.pid },
    api ? `ready: listening on ${api.url}` : 'ready: worker running',
  );
  onShutdown(logger, config.CP_SHUTDOWN_TIMEOUT_MS, () =>
    stopInOrder(logger, [
      // Before the API's requests finish: an invoke waiting for room there goes to the queue.
      ['runs in the api', async () => syncRuns?.stopTaking()],
      ['api', () => api?.close()],
      // After the API's requests: what they began in this process ends, or goes to the queue.
      ['invokes run in the api', () => syncRuns?.close()],
      ['workers', () => workers?.close()],
      ['worker metrics', () => metricsServer?.close()],
      ['connections', () => infra.close()],
      ['embedded stores', () => stores.stop()],
    ]),
  );
}

/**
 * Every step runs even when one before it failed (a store may already be gone: an operator
 * stopped it, or an embedded one crashed); failures are logged, not fatal.
 */
async function stopInOrder(
  logger: Logger,
  steps: [string, () => Promise<unknown> | undefined][],
): Promise<void> {
  for (const [name, step] of steps) {
    try {
      await step();
    } catch (err) {
      logger.warn({ err, step: name }, 'a shutdown step failed; continuing');
    }
  }
}

function onShutdown(logger: Logger, timeoutMs: number, stop: () => Promise<void>): void {
  let stopping = false;
  const handler = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: no new requests or jobs, finishing those in flight');
    // A job still running then is taken over by another worker once its lock lapses, as after a
    // crash (README): a designed end of a slow drain, so exit 0 and let supervisors see a stop.
    setTimeout(() => {
      logger.warn(
        { timeout_ms: timeoutMs },
        'shutdown took longer than CP_SHUTDOWN_TIMEOUT_MS; exiting, jobs still running go to other workers ' +
          '(invokes run in the API, to the reaper once their leases lapse)',
      );
      process.exit(0);
    }, timeoutMs).unref();
    stop().then(
      () => {
        logger.info('stopped cleanly');
        process.exit(0);
      },
      (err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => handler('SIGTERM'));
  process.on('SIGINT', () => handler('SIGINT'));
}

main().catch((err) => {
  if (err instanceof ConfigError) {
    console.error(
      `${err.message}\nFix the variables above (see "Configuration" in README.md) and start again.`,
    );
  } else {
    console.error('failed to start:', err instanceof Error ? err.message : err);
  }
  process.exit(1);
});
