/**
 * `npm run bench:seal -- [--events 20000] [--rounds 3]`: the audit seal alone. Each round puts a
 * backlog of synthetic events shaped like an invoke's (details of a few hundred bytes) into
 * audit_outbox of a fresh org, seals it with the sealer the `audit.seal` job runs, and prints
 * events per second with the CPU per event of this process and of PostgreSQL. The chain is
 * verified after the last round.
 */
import { randomBytes } from 'node:crypto';
import { benchOptions, NEEDS_STORES, positiveInt } from './bench-cli';
import { cpuMs, pidsOf } from './harness';
import { loadConfig } from '../infra/config';
import { createInfra, type Infra } from '../infra/container';
import { createLogger } from '../infra/logger';
import { verifyAudit } from '../domain/audit/verify-audit';
import { createTestDatabase, TEST_REDIS_URL } from '../test/support/test-db';
import { deleteKeysWithPrefix } from '../test/support/redis-keys';

const USAGE = `
npm run bench:seal -- [--events 20000] [--rounds 3]

Seals a backlog of --events synthetic audit events (shaped like an invoke's) per round, as the
audit.seal job does, and prints events/s and the CPU per event of the sealer and of PostgreSQL;
then verifies the chain.

${NEEDS_STORES}`;

/** Bindings: org id (twice), how many. An invoke's events carry ids, a model, usage and a cost. */
const BACKLOG = `
  insert into audit_outbox (id, org_id, at, actor_type, actor_id, action, resource_type, resource_id,
    outcome, details, request_id)
  select 'evt_' || ?::text || '_' || n, ?, now() + n * interval '1 microsecond', 'api_key', 'key_bench',
    'llm.invoke.succeeded', 'invocation', 'inv_bench_' || n, 'success',
    jsonb_build_object('session_id', 'ses_bench', 'agent_id', 'agt_bench', 'model', 'bench-model',
      'provider', 'openai_compatible', 'input_tokens', 12, 'output_tokens', 20, 'cost_usd', 0.000014,
      'provider_attempts', 1, 'decision_id', 'dec_bench_' || n, 'credential_ref', 'cred_bench'),
    'req_bench_' || n
  from generate_series(1, ?::int) as n`;

const postgresCpuMs = (): number => pidsOf('postgres').reduce((sum, pid) => sum + cpuMs(pid), 0);

async function sealRound(infra: Infra, orgId: string, events: number): Promise<void> {
  await infra.knex.raw(BACKLOG, [orgId, orgId, events]);
  const [ownBefore, pgBefore, start] = [cpuMs('self'), postgresCpuMs(), performance.now()];
  const sealed = await infra.auditLog.seal(orgId);
  const ms = performance.now() - start;
  const perEvent = (cpu: number) => ((cpu * 1000) / sealed).toFixed(0);
  console.log(
    `sealed ${sealed} events in ${ms.toFixed(0)} ms = ${Math.round((sealed * 1000) / ms)}/s;` +
      ` CPU µs per event: sealer ${perEvent(cpuMs('self') - ownBefore)}, postgres ${perEvent(postgresCpuMs() - pgBefore)}`,
  );
}

async function main() {
  const { text } = benchOptions(USAGE, ['events', 'rounds']);
  const events = positiveInt(USAGE, '--events', text('events'), 20_000);
  const rounds = positiveInt(USAGE, '--rounds', text('rounds'), 3);
  const db = await createTestDatabase();
  const prefix = `bench_${randomBytes(4).toString('hex')}`;
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    CP_REDIS_PREFIX: prefix,
    CP_MASTER_KEY: randomBytes(32).toString('base64'),
  });
  const infra = await createInfra(
    config,
    { databaseUrl: db.url, redisUrl: TEST_REDIS_URL },
    createLogger('silent'),
  );
  try {
    console.log(`node ${process.version}, ${rounds} rounds of ${events} events`);
    for (let round = 1; round <= rounds; round++) await sealRound(infra, `org_bench${round}`, events);
    const verified = await verifyAudit(infra.auditLog, `org_bench${rounds}`, infra.checkpointKeys);
    console.log(`verify of the last round's chain: ${JSON.stringify(verified)}`);
  } finally {
    await deleteKeysWithPrefix(infra.redis, prefix);
    await infra.close();
    await db.drop();
  }
}

main().catch((err) => {
  console.error('bench failed:', err);
  process.exit(1);
});
