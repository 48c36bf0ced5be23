/**
 * Audit log under many writers: C concurrent clients mint keys over HTTP for D seconds (each
 * mint is one transaction with its audit event), with the sealing worker running, then the
 * remaining backlog is sealed and the chain verified. Prints throughput and latency.
 *
 *   npm run bench:audit -- [concurrency=50] [seconds=10]
 *
 * Needs PostgreSQL on 127.0.0.1:5432 and Redis on 127.0.0.1:6379 (as the tests do).
 */
import { randomBytes } from 'node:crypto';
import { handleHelp, NEEDS_STORES, positiveInt } from './bench-cli';
import { startApi } from '../api/server';
import { loadConfig } from '../infra/config';
import { createInfra } from '../infra/container';
import { createLogger } from '../infra/logger';
import { signupOrg } from '../test/support/factories';
import { HttpClient } from '../test/support/http-client';
import { createTestDatabase, TEST_REDIS_URL } from '../test/support/test-db';
import { deleteKeysWithPrefix } from '../test/support/redis-keys';
import { startWorkers } from '../workers/start-workers';

const USAGE = `
npm run bench:audit -- [concurrency=50] [seconds=10]

Concurrent clients mint keys (one transaction and audit event each) while the sealer runs; then the
backlog is sealed and the chain verified. Prints throughput and latency.

${NEEDS_STORES}`;
handleHelp(USAGE);
const concurrency = positiveInt(USAGE, 'concurrency', process.argv[2], 50);
const seconds = positiveInt(USAGE, 'seconds', process.argv[3], 10);

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;

async function main() {
  const db = await createTestDatabase();
  const prefix = `bench_${randomBytes(4).toString('hex')}`;
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    CP_REDIS_PREFIX: prefix,
    CP_RATE_LIMIT_PER_MINUTE: '1000000',
    CP_PUBLIC_RATE_LIMIT_PER_MINUTE: '1000000',
    CP_MASTER_KEY: randomBytes(32).toString('base64'),
  });
  const infra = await createInfra(
    config,
    { databaseUrl: db.url, redisUrl: TEST_REDIS_URL },
    createLogger('silent'),
  );
  const workers = await startWorkers(infra);
  const api = await startApi(infra, 0, '127.0.0.1');
  try {
    const http = new HttpClient(api.url);
    const org = await signupOrg(http, 'Bench');
    console.log(
      `audit bench: ${concurrency} concurrent writers for ${seconds} s (one org, sealing worker on)`,
    );
    const latencies: number[] = [];
    const deadline = Date.now() + seconds * 1000;
    let errors = 0;
    const client = async () => {
      while (Date.now() < deadline) {
        const start = performance.now();
        const res = await http.post('/v1/keys', { name: 'bench', scopes: ['read'] }, org.adminKey);
        if (res.status === 201) latencies.push(performance.now() - start);
        else errors += 1;
      }
    };
    const progress = setInterval(() => console.log(`  ... ${latencies.length} writes`), 2000);
    await Promise.all(Array.from({ length: concurrency }, client));
    clearInterval(progress);
    latencies.sort((a, b) => a - b);
    console.log(
      `writes: ${latencies.length} in ${seconds} s = ${(latencies.length / seconds).toFixed(0)}/s, errors ${errors}`,
    );
    console.log(
      `write latency: p50 ${percentile(latencies, 0.5).toFixed(1)} ms, p99 ${percentile(latencies, 0.99).toFixed(1)} ms`,
    );
    const pending = Number((await infra.knex('audit_outbox').count('* as n').first())?.n ?? 0);
    const sealStart = performance.now();
    const sealed = await infra.auditLog.sealAll();
    const sealMs = performance.now() - sealStart;
    console.log(
      `backlog left for the sealer at the end: ${pending} events; sealed in ${sealMs.toFixed(0)} ms (${sealed} events)`,
    );
    const verifyStart = performance.now();
    const verify = await http.get<{ valid: boolean; entries_checked: number }>(
      '/v1/audit/verify',
      org.adminKey,
    );
    console.log(
      `verify: valid=${verify.body.valid}, ${verify.body.entries_checked} entries in ${(performance.now() - verifyStart).toFixed(0)} ms`,
    );
  } finally {
    await api.close();
    await workers.close();
    await deleteKeysWithPrefix(infra.redis, prefix);
    await infra.close();
    await db.drop();
  }
}

main().catch((err) => {
  console.error('bench failed:', err);
  process.exit(1);
});
