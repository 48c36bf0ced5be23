import type { CapLedger, ReserveOutcome } from '../budget/cap-ledger';
import { chargeFor, NOTHING, type CapAmounts } from '../budget/charges';
import type { Clock } from '../clock';
import { sealingContext } from '../credentials/credential-use-cases';
import type { SecretSealer } from '../ports';
import { microsToUsd } from '../pricing/cost';
import { ProviderError, type CompletionResult, type ProviderClient } from '../providers';
import type { Invocation } from './invocation';
import type { FinishWrite, InvocationStore, RunView, SealedCredential } from './invocation-store';
import { endWithoutUsage, recordOutcome, succeeded } from './outcomes';
import type { CompletionSignal } from './signals';
import type { StageJob } from './evaluate-invocation';

export interface RunDeps {
  store: InvocationStore;
  ledger: CapLedger;
  providers: ProviderClient;
  sealer: SecretSealer;
  signal: CompletionSignal;
  clock: Clock;
  providerTimeoutMs: number;
  /** Told about things an operator should see (a provider over-reporting usage, a cap refused late). */
  warn(message: string, fields: Record<string, unknown>): void;
}

/** Which attempt of the job's attempt policy this run is. */
export interface Attempt {
  number: number;
  max: number;
}

/** Thrown to have the job retried later, holding its reservation; the provider asked to wait `retryAfterMs`. */
export class RetryLater extends Error {
  constructor(
    readonly providerError: ProviderError,
    readonly retryAfterMs: number | null,
  ) {
    super(providerError.message);
    this.name = 'RetryLater';
  }
}

export type RunOutcome = 'succeeded' | 'failed' | 'skipped';

const amountsOf = (invocation: Invocation): CapAmounts => ({
  costMicros: invocation.reservation.costMicros,
  calls: 1,
  tokens: invocation.reservation.tokens,
});

/**
 * Reserves the worst case. When Redis lost the session's state (a restart without persistence)
 * it is rebuilt from PostgreSQL's settled usage and in-flight invocations first, so the cap holds.
 */
async function reserveBudget(deps: RunDeps, invocation: Invocation): Promise<ReserveOutcome> {
  for (let tries = 0; tries < 3; tries++) {
    const outcome = await deps.ledger.reserve(invocation.sessionId, invocation.id, amountsOf(invocation));
    if (outcome.kind !== 'missing') return outcome;
    const snapshot = await deps.store.capSnapshot(invocation.sessionId);
    if (!snapshot) throw new Error(`session ${invocation.sessionId} of ${invocation.id} is gone`);
    await deps.ledger.restore(snapshot);
  }
  throw new Error(`the cap state of session ${invocation.sessionId} could not be restored`);
}

/** Records the outcome, then settles the reservation at `charged`. */
async function finish(
  deps: RunDeps,
  invocation: Invocation,
  write: FinishWrite,
  charged: CapAmounts,
): Promise<RunOutcome> {
  const written = await recordOutcome(deps, invocation, write, () =>
    deps.ledger.settle(invocation.sessionId, invocation.id, charged),
  );
  if (written === 'skipped') return 'skipped';
  if (written === 'cap_violation') return refusedByDatabase(deps, invocation);
  return write.status === 'succeeded' ? 'succeeded' : 'failed';
}

/** The database's cap constraint refused usage the ledger had let through: fail it, charge nothing. */
async function refusedByDatabase(deps: RunDeps, invocation: Invocation): Promise<RunOutcome> {
  deps.warn('a session cap refused a charge the reservation allowed; charging nothing', {
    invocation_id: invocation.id,
    session_id: invocation.sessionId,
  });
  const error = { errorCode: 'budget_exceeded', message: 'the session cap would be crossed' };
  const write = endWithoutUsage(invocation, ['running'], 'failed', error, deps.clock.now());
  return finish(deps, invocation, write, NOTHING);
}

const fail = (deps: RunDeps, invocation: Invocation, errorCode: string, message: string, calls = 0) =>
  finish(
    deps,
    invocation,
    endWithoutUsage(invocation, ['running'], 'failed', { errorCode, message }, deps.clock.now(), {
      chargedCalls: calls,
    }),
    { ...NOTHING, calls },
  );

/** A provider that answered (even with an error) or timed out was reached: that counts as a call. */
const reachedProvider = (err: ProviderError) => err.status !== null || err.code === 'provider_timeout';

/** A secret that does not open (its master key is not configured, or the row was tampered with). */
function openSecret(deps: RunDeps, invocation: Invocation, credential: SealedCredential): string {
  try {
    return deps.sealer.open(
      { keyId: credential.keyId, sealed: credential.sealedSecret ?? '' },
      sealingContext(invocation.orgId, credential.ref),
    );
  } catch {
    throw new ProviderError(
      'final',
      'credential_unreadable',
      `credential ${credential.ref} cannot be decrypted with the configured master keys`,
    );
  }
}

async function callProvider(deps: RunDeps, view: RunView, trace: Record<string, string>) {
  const { invocation, credential } = view;
  if (!credential?.sealedSecret) return null;
  const secret = openSecret(deps, invocation, credential);
  return deps.providers.complete({
    provider: credential.provider,
    baseUrl: credential.baseUrl,
    secret,
    model: invocation.model,
    messages: invocation.request.messages,
    maxTokens: invocation.request.maxTokens,
    ...(invocation.request.temperature !== undefined ? { temperature: invocation.request.temperature } : {}),
    timeoutMs: deps.providerTimeoutMs,
    trace,
  });
}

async function recordSuccess(deps: RunDeps, invocation: Invocation, result: CompletionResult) {
  const { request, price } = invocation;
  const charge = chargeFor(result.usage, request.messages, request.maxTokens, price);
  if (charge.capped)
    deps.warn('the provider reported more tokens than the request allows; charged at the bound', {
      invocation_id: invocation.id,
      reported: result.usage,
    });
  const usage = { inputTokens: charge.inputTokens, outputTokens: charge.outputTokens };
  const write = succeeded(invocation, result.output, usage, charge.costMicros, deps.clock.now());
  return finish(deps, invocation, write, {
    costMicros: charge.costMicros,
    calls: 1,
    tokens: charge.inputTokens + charge.outputTokens,
  });
}

/**
 * The `invoke` job: reserve the worst case, call the provider with the decrypted credential,
 * then record the result, usage and audit entry in one transaction and settle at the real cost.
 * Idempotent by invocation id: a finished invocation is skipped, a reservation is taken once, a
 * charge is settled once. A retryable provider error before the last attempt throws RetryLater,
 * keeping the reservation for the next attempt.
 */
export async function runInvocation(deps: RunDeps, job: StageJob, attempt: Attempt): Promise<RunOutcome> {
  const view = await deps.store.forRun(job.invocationId);
  if (!view || view.invocation.status !== 'running') return 'skipped';
  const { invocation } = view;
  const reserved = await reserveBudget(deps, invocation);
  if (reserved.kind === 'settled') return 'skipped';
  if (reserved.kind === 'refused') {
    const message = `the session's ${reserved.cap} cap would be crossed (remaining ${reserved.cap === 'cost' ? microsToUsd(reserved.remaining) : reserved.remaining})`;
    return fail(deps, invocation, 'budget_exceeded', message);
  }
  let result: CompletionResult | null;
  try {
    result = await callProvider(deps, view, job.trace);
  } catch (err) {
    if (!(err instanceof ProviderError)) throw err;
    if (err.kind === 'retryable' && attempt.number < attempt.max)
      throw new RetryLater(err, err.retryAfterSeconds === null ? null : err.retryAfterSeconds * 1000);
    return fail(deps, invocation, err.code, err.message, reachedProvider(err) ? 1 : 0);
  }
  if (!result)
    return fail(
      deps,
      invocation,
      'credential_not_found',
      `credential ${invocation.credentialRef} was deleted`,
    );
  return recordSuccess(deps, invocation, result);
}
