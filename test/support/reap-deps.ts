import type { ReapDeps } from '../../domain/invocations/reap-invocations';
import type { TestApp } from './test-app';

/**
 * The reaper's dependencies on a test app, for tests that run a reap themselves: every stuck
 * invocation is looked at at once (`stuckAfterMs` 0), and leases older than `leaseGraceMs`.
 */
export const reapDepsOf = (app: TestApp, leaseGraceMs = 0): ReapDeps => ({
  store: app.infra.invocations,
  queue: app.infra.queues.stages,
  ledger: app.infra.ledger,
  signal: app.infra.completions,
  clock: app.infra.clock,
  runningInApi: (id) => app.infra.runClaims.held(id),
  stuckAfterMs: 0,
  leaseGraceMs,
  warn: () => undefined,
});
