import { requestDigest } from '../approvals/request-digest';
import type { CapLedger, ReserveOutcome } from '../budget/cap-ledger';
import {
  CAP_FIELDS,
  crossedBySettling,
  inContractUnits,
  refusalDetails,
  refusalMessage,
  settlingRefusalMessage,
} from '../budget/cap-refusal';
import { chargeFor, NOTHING, type CapAmounts } from '../budget/charges';
import { chargeIdOf } from '../budget/charge-id';
import type { Clock } from '../clock';
import { sealingContext } from '../credentials/credential-use-cases';
import type { SecretSealer } from '../ports';
import {
  ProviderError,
  type CompletionRequest,
  type CompletionResult,
  type Provider,
  type ProviderClient,
} from '../providers';
import {
  answerArrived,
  failedAttemptCharge,
  NO_CHARGE,
  reservationCharge,
  type AttemptCharge,
} from './attempt-charges';
import type { Invocation, InvocationError, InvocationOutput } from './invocation';
import type { InvocationStore, RunView, SealedCredential, WriteOutcome } from './invocation-store';
import { statusesOf } from './lifecycle';
import { AfterRecording, outcomeWrite, recordOutcome } from './outcomes';
import { PieceBatcher } from './piece-batcher';
import { StorablePieces } from './storable-pieces';
import type { CompletionSignal, PieceRelay } from './signals';
import type { StageJob } from './evaluate-invocation';
import type { Guardian } from '../policy/guardian';
import { stoppedAfterWait, type Wait } from './resume-checks';

export interface RunDeps {
  store: InvocationStore;
  ledger: CapLedger;
  providers: ProviderClient;
  sealer: SecretSealer;
  signal: CompletionSignal;
  /** Decides again, before its first attempt, an invocation an approval resumed (resume-checks.ts). */
  guardian: Guardian;
  /**
   * Throws OrgAtCapacity while the org is past its share of evaluation time: asked before an
   * invocation that waited reserves, since the check it then runs cannot wait (evaluation-time.ts).
   */
  evaluationTurn(orgId: string): void;
  /** Carries a streamed answer's pieces to the API, and its client's hang-up back. */
  pieces: PieceRelay;
  clock: Clock;
  providerTimeoutMs: number;
  /** Told about things an operator should see (a provider over-reporting usage, a cap refused late). */
  warn(message: string, fields: Record<string, unknown>): void;
  /** Counts a provider's answer that reported more usage than its request allows (charged at the bound). */
  usageCapped(provider: Provider): void;
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

/**
 * The row the submit's job admitted, handed to its run so it is not read again. `decidedNow` is
 * false when an earlier attempt of that job decided it (it stopped before the run): time passed.
 */
export interface Admitted {
  view: RunView;
  decidedNow: boolean;
}

/** `undecided`: the invocation still waits for the guardian stage, which this stage never runs. */
export type RunOutcome = 'succeeded' | 'failed' | 'skipped' | 'undecided';

/** The statuses this stage works on (lifecycle.ts): its writes apply only while it holds one. */
const RUN_STATUSES = statusesOf('invocation.run');
const EVALUATE_STATUSES = statusesOf('invocation.evaluate');

/** One provider attempt of an invocation: it reserves, and is charged, under its own charge id. */
interface AttemptRun {
  deps: RunDeps;
  invocation: Invocation;
  /** 1-based: the attempts recorded so far, plus this one. */
  number: number;
  chargeId: string;
  /** What it waited for since it was admitted (waitOf): such a run is checked again before its call. */
  wait: Wait | null;
}

const amountsOf = (invocation: Invocation): CapAmounts => ({
  costMicros: invocation.reservation.costMicros,
  calls: 1,
  tokens: invocation.reservation.tokens,
});

/**
 * Reserves the worst case. When Redis lost the session's state (a restart without persistence)
 * it is rebuilt from PostgreSQL's settled usage and in-flight invocations first, so the cap holds.
 */
async function reserveBudget(run: AttemptRun): Promise<ReserveOutcome> {
  const { deps, invocation } = run;
  for (let tries = 0; tries < 3; tries++) {
    const outcome = await deps.ledger.reserve(invocation.sessionId, run.chargeId, amountsOf(invocation));
    if (outcome.kind !== 'missing') return outcome;
    const snapshot = await deps.store.capSnapshot(invocation.sessionId);
    if (!snapshot) throw new Error(`session ${invocation.sessionId} of ${invocation.id} is gone`);
    await deps.ledger.restore(snapshot);
  }
  throw new Error(`the cap state of session ${invocation.sessionId} could not be restored`);
}

type AttemptEnd = { status: 'running' | 'succeeded' | 'failed'; output?: InvocationOutput };

/**
 * Records how the attempt ended with its charge (PostgreSQL first, the truth a ledger rebuild
 * reads), then settles its reservation at that charge. A write that does not apply (another run
 * or a cancel won) settles nothing here; the reaper returns what such a run left behind.
 */
async function recordAttempt(
  run: AttemptRun,
  end: AttemptEnd,
  error: InvocationError | null,
  charge: AttemptCharge,
): Promise<WriteOutcome> {
  const { deps, invocation } = run;
  if (charge.reported) {
    deps.warn('the provider reported more tokens than the request allows; charged at the bound', {
      invocation_id: invocation.id,
      reported: charge.reported,
    });
    deps.usageCapped(invocation.provider);
  }
  const write = outcomeWrite(
    invocation,
    {
      from: RUN_STATUSES,
      status: end.status,
      output: end.output ?? null,
      error,
      charge,
      providerAttempt: run.number,
    },
    deps.clock.now(),
  );
  const written = await recordOutcome(deps, invocation, write, () =>
    deps.ledger.settle(invocation.sessionId, run.chargeId, charge.amounts),
  );
  if (written === 'cap_violation') await refusedByDatabase(run, charge.amounts);
  return written;
}

const runOutcome = (written: WriteOutcome, status: AttemptEnd['status']): RunOutcome =>
  written === 'skipped'
    ? 'skipped'
    : written === 'applied' && status === 'succeeded'
      ? 'succeeded'
      : 'failed';

const fail = async (run: AttemptRun, error: InvocationError, charge: AttemptCharge): Promise<RunOutcome> =>
  runOutcome(await recordAttempt(run, { status: 'failed' }, error, charge), 'failed');

/**
 * The database's cap constraint refused usage the ledger had let through: fail it, charge nothing.
 * The session's settled usage says which cap and what remained (as a 402 from the ledger does).
 */
async function refusedByDatabase(run: AttemptRun, refused: CapAmounts): Promise<void> {
  const sessionId = run.invocation.sessionId;
  run.deps.warn('a session cap refused a charge the reservation allowed; charging nothing', {
    invocation_id: run.invocation.id,
    session_id: sessionId,
  });
  const snapshot = await run.deps.store.capSnapshot(sessionId);
  const crossed = snapshot && crossedBySettling(snapshot, refused);
  const refusal = crossed && inContractUnits(crossed);
  const error = {
    errorCode: 'budget_exceeded',
    message: refusal ? settlingRefusalMessage(refusal) : 'the session cap would be crossed',
    details: refusal ? refusalDetails(sessionId, refusal) : { session_id: sessionId },
  };
  await recordAttempt(run, { status: 'failed' }, error, NO_CHARGE);
}

/**
 * An earlier run of this attempt reserved and never settled: its worker died, or it failed after
 * the call (saving the answer, say). The provider may have answered and billed, so the attempt is
 * charged at its reservation and the provider is not called again for this invocation.
 */
function endUnknown(run: AttemptRun): Promise<RunOutcome> {
  run.deps.warn('an earlier run reserved this attempt and never settled it; charging the reservation', {
    invocation_id: run.invocation.id,
    attempt: run.number,
  });
  const error = {
    errorCode: 'provider_outcome_unknown',
    message:
      'an earlier run of this invocation stopped after its provider call began; the call is charged at its reservation and not repeated',
  };
  return fail(run, error, reservationCharge(run.invocation));
}

/**
 * A provider call that failed: charged by what reached the provider (attempt-charges.ts). A
 * retryable failure before the last attempt is recorded with the invocation still running, then
 * RetryLater has the job run again: the next attempt is a new charge that must fit the caps. A
 * stream whose pieces reached its client is not tried again: a second answer would follow the
 * first one's beginning on the client's screen.
 */
async function recordFailedAttempt(
  run: AttemptRun,
  err: ProviderError,
  attempt: Attempt,
): Promise<RunOutcome> {
  const charge = failedAttemptCharge(run.invocation, err);
  const error = { errorCode: err.code, message: err.message };
  const final = err.kind !== 'retryable' || attempt.number >= attempt.max || answerArrived(err.streamed);
  if (final) return fail(run, error, charge);
  const written = await recordAttempt(run, { status: 'running' }, error, charge);
  if (written !== 'applied') return runOutcome(written, 'running');
  throw new RetryLater(err, err.retryAfterSeconds === null ? null : err.retryAfterSeconds * 1000);
}

/** A secret that does not open (its master key is not configured, or the row was tampered with). */
function openSecret(deps: RunDeps, invocation: Invocation, credential: SealedCredential): string {
  try {
    return deps.sealer.open(
      { keyId: credential.keyId, sealed: credential.sealedSecret ?? '' },
      sealingContext(invocation.orgId, credential),
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
  const { request } = invocation;
  const call: CompletionRequest = {
    provider: credential.provider,
    baseUrl: credential.baseUrl,
    secret: openSecret(deps, invocation, credential),
    model: invocation.model,
    messages: request.messages,
    maxTokens: request.maxTokens,
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
    ...(request.tools ? { tools: request.tools } : {}),
    ...(request.toolChoice !== undefined ? { toolChoice: request.toolChoice } : {}),
    timeoutMs: deps.providerTimeoutMs,
    trace,
  };
  return request.stream ? streamCall(deps, invocation.id, call) : deps.providers.complete(call);
}

/**
 * A streamed call: each piece goes to the API process streaming it as it arrives; the client
 * hanging up aborts the provider call (and it is charged what it used, see attempt-charges.ts).
 */
async function streamCall(deps: RunDeps, invocationId: string, call: CompletionRequest) {
  const hangUp = new AbortController();
  const unwatch = deps.pieces.watchAbort(invocationId, () => hangUp.abort());
  let begun = false;
  const storable = new StorablePieces((delta) => {
    if (!begun) deps.pieces.begin(invocationId);
    begun = true;
    deps.pieces.piece(invocationId, delta);
  });
  const pieces = new PieceBatcher((delta) => storable.add(delta));
  try {
    // Read after the reservation: a failed read must not throw (a rerun would charge the reservation).
    if (await deps.pieces.hungUp(invocationId).catch(() => false)) throw goneBeforeCall();
    return await deps.providers.stream({ ...call, signal: hangUp.signal }, (delta) => pieces.add(delta));
  } finally {
    // The last pieces go out before the end is told (recorded, then signalled).
    pieces.close();
    storable.close();
    unwatch();
  }
}

const goneBeforeCall = () =>
  new ProviderError(
    'final',
    'provider_aborted',
    'the client hung up before the call began; it was not made',
    null,
    null,
    'not_sent',
  );

async function recordSuccess(run: AttemptRun, result: CompletionResult): Promise<RunOutcome> {
  const { deps, invocation } = run;
  const { request, price } = invocation;
  const charged = chargeFor(result.usage, request.messages, request.maxTokens, price, request.tools);
  const usage = { inputTokens: charged.inputTokens, outputTokens: charged.outputTokens };
  const tokens = usage.inputTokens + usage.outputTokens;
  const charge: AttemptCharge = {
    amounts: { costMicros: charged.costMicros, calls: 1, tokens },
    usage,
    ...(charged.capped ? { reported: result.usage } : {}),
  };
  try {
    const output = {
      ...result.output,
      ...(result.finishReason ? { finishReason: result.finishReason } : {}),
    };
    const end = { status: 'succeeded', output } as const;
    return runOutcome(await recordAttempt(run, end, null, charge), 'succeeded');
  } catch (err) {
    if (err instanceof AfterRecording) {
      // Stored and charged in PostgreSQL (QA: this was logged as an answer not stored).
      deps.warn(`the answer is stored; ${err.step} failed (the reaper settles, waiters read the row)`, {
        invocation_id: invocation.id,
        error: (err.reason as Error | undefined)?.name ?? String(err.reason),
      });
      return 'succeeded';
    }
    // The provider answered: whatever stops the answer being saved, the call is still charged.
    deps.warn('the answer could not be stored; recording the charge without it', {
      invocation_id: invocation.id,
      error: (err as { code?: unknown }).code ?? (err as Error).name,
    });
    const error = {
      errorCode: 'output_not_stored',
      message: 'the provider answered, but the answer could not be stored; the call is charged',
    };
    return fail(run, error, charge);
  }
}

/**
 * The `invoke` job: reserve the worst case under this attempt's charge id, call the provider with
 * the decrypted credential, then record the result, usage and audit entry in one transaction and
 * settle at the real cost. Idempotent by invocation id and attempt: a finished invocation is
 * skipped, a settled charge is never taken again, and a charge an earlier run reserved and never
 * settled is charged at its reservation without calling the provider again. `admitted` is the row
 * as the guardian stage of this same job left it, when that stage admitted the invocation.
 */
export async function runInvocation(
  deps: RunDeps,
  job: StageJob,
  attempt: Attempt,
  admitted?: Admitted,
): Promise<RunOutcome> {
  const view = admitted?.view ?? (await deps.store.forRun(job.invocationId));
  if (view && EVALUATE_STATUSES.includes(view.invocation.status)) return 'undecided';
  if (!view || !RUN_STATUSES.includes(view.invocation.status)) return 'skipped';
  const { invocation } = view;
  const number = invocation.providerAttempts + 1;
  const wait = waitOf(invocation, admitted?.decidedNow === true);
  const run: AttemptRun = { deps, invocation, number, chargeId: chargeIdOf(invocation.id, number), wait };
  if (notAsApproved(view)) return refuseUnapproved(run);
  // Before anything is reserved, the job may still go back to wait its org's turn.
  if (wait !== null) deps.evaluationTurn(invocation.orgId);
  const reserved = await reserveBudget(run);
  if (reserved.kind === 'settled') return 'skipped';
  if (reserved.kind === 'held') return endUnknown(run);
  if (reserved.kind === 'refused') return refuseOverCap(run, reserved);
  const stopped = await stopAfterWait(run);
  if (stopped) return stopped;
  let result: CompletionResult | null;
  try {
    result = await callProvider(deps, view, job.trace);
  } catch (err) {
    if (!(err instanceof ProviderError)) throw err;
    return recordFailedAttempt(run, err, attempt);
  }
  if (!result) {
    const error = {
      errorCode: 'credential_not_found',
      message: `credential ${invocation.credentialRef} was deleted`,
    };
    return fail(run, error, NO_CHARGE);
  }
  return recordSuccess(run, result);
}

/**
 * Nothing was reserved: the invocation fails without ending (or charging) an attempt, approved or
 * not. The contract keeps `denied` for the guardian's and people's refusals; a client reads
 * `failed` with budget_exceeded as "a larger session would run it" (QA: approved ones ended denied).
 */
async function refuseOverCap(
  run: AttemptRun,
  refused: Extract<ReserveOutcome, { kind: 'refused' }>,
): Promise<RunOutcome> {
  const needed = amountsOf(run.invocation)[CAP_FIELDS[refused.cap]];
  const refusal = inContractUnits({ ...refused, needed });
  const error = {
    errorCode: 'budget_exceeded',
    message: refusalMessage(refusal),
    details: refusalDetails(run.invocation.sessionId, refusal),
  };
  return runOutcome(await endBeforeAttempt(run, 'failed', error), 'failed');
}

/**
 * An approved invocation's first attempt, any retry, or a first attempt some time after its
 * decision (its job stopped and was taken again, or the reaper enqueued it anew), once reserved
 * (so an earlier run that may have reached the provider was charged as `held` instead): ended, and
 * the reservation returned, if its session, its key or the guardian now stops it
 * (resume-checks.ts). A retry may come a minute after the call before it: closing the session or
 * suspending the agent stops it as it stops a new one.
 */
async function stopAfterWait(run: AttemptRun): Promise<RunOutcome | null> {
  const { deps, invocation, wait } = run;
  if (wait === null) return null;
  const stop = await stoppedAfterWait(deps, invocation, wait);
  if (!stop) return null;
  const release = () => deps.ledger.settle(invocation.sessionId, run.chargeId, NOTHING);
  return runOutcome(await endBeforeAttempt(run, stop.status, stop.error, release), 'failed');
}

/**
 * What an invocation about to run waited for since it was admitted, if anything: only a first
 * attempt that this job's guardian stage admitted just now waited for nothing.
 */
function waitOf(invocation: Invocation, decidedNow: boolean): Wait | null {
  if (invocation.providerAttempts > 0) return 'retry';
  if (invocation.approvalId !== null) return 'approval';
  return decidedNow ? null : 'restart';
}

/** The invocation ends without ending (or charging) an attempt; `release` returns what it reserved. */
async function endBeforeAttempt(
  run: AttemptRun,
  status: 'failed' | 'denied',
  error: InvocationError,
  release?: () => Promise<unknown>,
): Promise<WriteOutcome> {
  const { deps, invocation } = run;
  const write = outcomeWrite(invocation, { from: RUN_STATUSES, status, error }, deps.clock.now());
  return recordOutcome(deps, invocation, write, release);
}

/**
 * An invocation an approval resumed runs only the request that was approved: a row changed since
 * the vote (or an approval that is not `approved`) fails it before anything is reserved or sent.
 */
const notAsApproved = ({ invocation, approvedDigest }: RunView): boolean =>
  invocation.approvalId !== null && approvedDigest !== requestDigest(invocation, invocation.request);

function refuseUnapproved(run: AttemptRun): Promise<RunOutcome> {
  run.deps.warn('a resumed invocation no longer matches its approved request; not running it', {
    invocation_id: run.invocation.id,
    approval_id: run.invocation.approvalId,
  });
  const error = {
    errorCode: 'approval_mismatch',
    message: 'the request no longer matches the one that was approved; it was not run',
  };
  return fail(run, error, NO_CHARGE);
}
