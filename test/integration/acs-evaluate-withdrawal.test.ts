import { setTimeout as sleep } from 'node:timers/promises';
import { OrgAtCapacity } from '../../domain/org-at-capacity';
import type { Decision } from '../../domain/policy/decision';
import { evaluateAction, type EvaluateActionDeps } from '../../domain/policy/evaluate-action';
import type { EvaluationRelay, EvaluationRequest } from '../../domain/policy/evaluation';
import { EVALUATION_BURST_MS } from '../../domain/policy/evaluation-time';
import type { Action } from '../../domain/policy/policy';
import {
  CLAIMED_GRACE_MS,
  submitEvaluation,
  type SubmitEvaluationDeps,
} from '../../domain/policy/submit-evaluation';
import { evaluationProcessor } from '../../workers/evaluation-processor';
import { signupOrg, type SignedUpOrg } from '../support/factories';
import { startTestApp, type TestApp } from '../support/test-app';

/**
 * `POST /v1/acs/evaluate` waits for its `acs.evaluate` job, which may run later (its org past its
 * share of evaluation time, busy workers). A 503 must mean nothing was recorded: a request the API
 * withdrew when it stopped waiting is never evaluated into the log, and one a worker claimed in
 * time is answered.
 */
let app: TestApp;
let org: SignedUpOrg;

beforeAll(async () => {
  app = await startTestApp();
  org = await signupOrg(app.http);
});
afterAll(() => app.close());

/** The API's wait, shortened (the route waits 10 s). */
const WAIT_MS = 300;
const action: Action = { type: 'tool.call', tool: { name: 'search', arguments: { q: 'x' } } };

/** The API side as the route builds it; `enqueued` stands for the guardian queue. */
function submit(enqueued: (id: string) => void): Promise<Decision> {
  const { infra } = app;
  const deps: SubmitEvaluationDeps = {
    uow: infra.uow,
    sessions: infra.sessions,
    relay: infra.evaluations,
    enqueue: async (job) => {
      enqueued(job.evaluation_id);
    },
    waiter: infra.completions,
    clock: infra.clock,
    waitMs: WAIT_MS,
  };
  const principal = {
    kind: 'api_key' as const,
    id: org.adminKeyId,
    orgId: org.orgId,
    scopes: [],
    tokenHash: '',
  };
  return submitEvaluation(
    deps,
    { principal, requestId: null },
    { agentId: null, sessionId: null, action },
    {},
  );
}

/** The job as its processor runs it, its reads of the policy version or its decision log write slowed. */
function jobDeps(slow: { versionMs?: number; recordMs?: number } = {}): EvaluateActionDeps {
  const { infra } = app;
  const log = infra.decisionLog;
  return {
    relay: infra.evaluations,
    policies: infra.compiledPolicies,
    policyVersion: async (orgId) => (await sleep(slow.versionMs ?? 0), infra.policySets.policyVersion(orgId)),
    decisions: {
      list: (orgId, filter, page) => log.list(orgId, filter, page),
      get: (orgId, id) => log.get(orgId, id),
      record: async (decision, event) => (await sleep(slow.recordMs ?? 0), log.record(decision, event)),
    },
    announce: (id) => infra.completions.announce(id),
    runner: infra.evaluationRunner,
    clock: infra.clock,
  };
}

const runJob = (id: string) =>
  evaluationProcessor({ evaluation_id: id, org_id: org.orgId, trace: {} }, app.infra);

const decisionRows = (id: string) => app.infra.knex('decisions').where({ id });

/** Audit entries about the decision, sealed or still in the outbox. */
async function auditCount(id: string): Promise<number> {
  const { rows } = (await app.infra.knex.raw(
    `select (select count(*) from audit_outbox where resource_id = ?)
      + (select count(*) from audit_entries where resource_id = ?) as n`,
    [id, id],
  )) as { rows: { n: string }[] };
  return Number(rows[0]?.n);
}

const NOTHING_RECORDED = {
  code: 'unavailable',
  message: 'the guardian did not decide in time and nothing was recorded; retry the evaluation',
};

it('answers at once with the decision recorded when a worker decides within the wait', async () => {
  let job: Promise<unknown> = Promise.resolve();
  const decision = await submit((id) => (job = runJob(id)));
  expect(await job).toBe('decided');
  expect(decision.verdict).toBe('allow');
  expect(await decisionRows(decision.id)).toHaveLength(1);
  expect(await auditCount(decision.id)).toBe(1);
});

it('never records a request withdrawn before a worker took it, even when its job runs afterwards', async () => {
  // The job finds its org past its share and goes back to the queue; it runs after the 503.
  app.infra.evaluationTime.charge(org.orgId, EVALUATION_BURST_MS + 100);
  let id = '';
  let deferred: Promise<unknown> = Promise.resolve();
  const started = Date.now();
  await expect(submit((queued) => ((id = queued), (deferred = runJob(queued))))).rejects.toMatchObject(
    NOTHING_RECORDED,
  );
  // Withdrawn, not waited on for the grace: no worker had it.
  expect(Date.now() - started).toBeLessThan(WAIT_MS + CLAIMED_GRACE_MS / 2);
  await expect(deferred).rejects.toBeInstanceOf(OrgAtCapacity);

  while (app.infra.evaluationTime.waitMs(org.orgId) > 0) await sleep(50);
  expect(await runJob(id)).toBe('skipped');
  expect(await decisionRows(id)).toEqual([]);
  expect(await auditCount(id)).toBe(0);
});

it('records nothing when the request is withdrawn while the engine decides it', async () => {
  let job: Promise<unknown> = Promise.resolve();
  let id = '';
  const slowRead = jobDeps({ versionMs: WAIT_MS * 2 });
  await expect(
    submit((queued) => ((id = queued), (job = evaluateAction(slowRead, queued)))),
  ).rejects.toMatchObject(NOTHING_RECORDED);
  expect(await job).toBe('skipped');
  expect(await decisionRows(id)).toEqual([]);
  expect(await auditCount(id)).toBe(0);
});

it('answers a request a worker claimed before the wait ran out, once recorded within the grace', async () => {
  let job: Promise<unknown> = Promise.resolve();
  const slowWrite = jobDeps({ recordMs: WAIT_MS * 3 });
  const started = Date.now();
  const decision = await submit((id) => (job = evaluateAction(slowWrite, id)));
  expect(Date.now() - started).toBeGreaterThanOrEqual(WAIT_MS * 3);
  expect(await job).toBe('decided');
  expect(decision.verdict).toBe('allow');
  expect(await decisionRows(decision.id)).toHaveLength(1);
  expect(await auditCount(decision.id)).toBe(1);
});

it('answers 503 naming the decision when the worker that claimed the request never answers', async () => {
  // A worker claims, then its process dies: its job is taken up again only once its lock lapses.
  let id = '';
  const started = Date.now();
  const answer = submit((queued) => {
    id = queued;
    void app.infra.evaluations.claim(queued);
  });
  const refused: unknown = await answer.catch((err: unknown) => err);
  expect(refused).toMatchObject({
    code: 'unavailable',
    message: expect.stringContaining(`look for GET /v1/acs/decisions/${id} before you retry`),
  });
  expect(Date.now() - started).toBeGreaterThanOrEqual(WAIT_MS + CLAIMED_GRACE_MS);
});

/** A request as the API puts it in the relay: the admin key's, for no agent. */
const request = (id: string): EvaluationRequest => ({
  id,
  orgId: org.orgId,
  agentId: null,
  sessionId: null,
  agent: null,
  action,
  requestedBy: { type: 'api_key', id: org.adminKeyId },
  requestId: null,
});

describe('a job retried after its worker died holding the claim', () => {
  it('cannot be withdrawn, and the retry finishes the evaluation', async () => {
    const id = `dec_claimed_${Date.now()}`;
    await app.infra.evaluations.put(request(id));
    expect(await app.infra.evaluations.claim(id)).toBe('taken');
    expect(await app.infra.evaluations.withdraw(id)).toBe(false);
    expect(await runJob(id)).toBe('decided');
    expect((await app.infra.evaluations.answered(id))?.verdict).toBe('allow');
    expect(await decisionRows(id)).toHaveLength(1);
  });

  it('answers with the decision an earlier attempt recorded, and records none again', async () => {
    const id = `dec_recorded_${Date.now()}`;
    await app.infra.evaluations.put(request(id));
    // The first attempt claims and records, then dies before it answers.
    const dying: EvaluationRelay = Object.assign(Object.create(app.infra.evaluations) as EvaluationRelay, {
      answer: () => Promise.reject(new Error('worker killed')),
    });
    const first = { ...jobDeps(), relay: dying };
    await expect(evaluateAction(first, id)).rejects.toThrow('worker killed');
    const recorded = await app.infra.decisionLog.get(org.orgId, id);

    expect(await runJob(id)).toBe('decided');
    const answer = await app.infra.evaluations.answered(id);
    expect(answer?.evaluatedAt).toEqual(recorded?.evaluatedAt);
    expect(await decisionRows(id)).toHaveLength(1);
    expect(await auditCount(id)).toBe(1);
  });
});

it('keeps a withdrawn request from being claimed, and the claimed key short-lived', async () => {
  const relay = app.infra.evaluations;
  const id = `dec_keys_${Date.now()}`;
  await relay.put(request(id));
  expect(await relay.withdraw(id)).toBe(true);
  expect(await relay.claim(id)).toBeNull();
  expect(await relay.request(id)).toBeNull();

  await relay.put(request(`${id}_b`));
  expect(await relay.claim(`${id}_b`)).toBe('taken');
  expect(await relay.claim(`${id}_b`)).toBe('again');
  expect((await relay.request(`${id}_b`))?.id).toBe(`${id}_b`);
  const ttl = await app.infra.redis.ttl(`${app.prefix}:acs:claimed:${id}_b`);
  expect(ttl).toBeGreaterThan(0);
  expect(ttl).toBeLessThanOrEqual(120);
});
