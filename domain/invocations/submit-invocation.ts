import { newAuditEvent } from '../audit/new-event';
import { activeAgent } from '../agents/active-agent';
import type { CapLedger } from '../budget/cap-ledger';
import { NOTHING, worstCase, type CapAmounts } from '../budget/charges';
import type { Clock } from '../clock';
import { invalidField, notFound } from '../errors';
import { newId } from '../ids';
import type { Rates } from '../pricing/cost';
import { effectivePrice, unpricedModel } from '../pricing/price-use-cases';
import { actorOf, type CallContext } from '../principal';
import type { ChatMessage } from '../providers';
import { assertFits, assertOpen, assertSessionAgent, type Session } from '../sessions/session';
import { awaitFinished } from './read-invocations';
import type { Invocation, InvocationRequest, InvocationSummary } from './invocation';
import type { AgentGate } from '../policy/guardian';
import type { FreshInvoke } from './decide-at-submit';
import type { CredentialRefInfo, GuardianView, InvocationStore, InvokeContext } from './invocation-store';
import type { CompletionWaiter, StageQueue, SyncRunner } from './signals';

export interface InvokeDeps {
  store: InvocationStore;
  queue: StageQueue;
  /** Runs an invoke whose client waits in this process, when it has room, instead of queuing it. */
  syncRuns: SyncRunner;
  waiter: CompletionWaiter;
  /** What calls in flight hold, for the admission pre-check. */
  ledger: Pick<CapLedger, 'reserved'>;
  clock: Clock;
  maxMessages: number;
  warn(message: string, fields: Record<string, unknown>): void;
}

export interface InvokeInput {
  sessionId: string;
  model: string;
  messages: ChatMessage[];
  maxTokens: number;
  temperature?: number | undefined;
  credentialRef?: string | undefined;
  agentId?: string | undefined;
  tool?: { name: string; arguments: unknown } | undefined;
  tools?: unknown[] | undefined;
  toolChoice?: unknown;
  stream?: boolean | undefined;
  metadata?: Record<string, unknown> | undefined;
  /** W3C trace context of the request, carried into the jobs. */
  trace: Record<string, string>;
}

/** The agent the invocation acts for: the request's, else the session's; they may not differ. */
function agentOf(session: Session, input: InvokeInput, context: InvokeContext): AgentGate | null {
  assertSessionAgent(session, input.agentId);
  if (!(input.agentId ?? session.agentId)) return null;
  return activeAgent(context.agent, 'invoking');
}

/** The credential named, else the agent's first; a deleted one fails later as credential_not_found. */
function credentialOf(input: InvokeInput, agent: AgentGate | null, context: InvokeContext) {
  if (!input.credentialRef && !agent?.credentialRefs[0])
    throw invalidField(
      'credential_ref',
      'credential_ref: required when the agent has no credential_refs (or no agent is named)',
    );
  if (!context.credential)
    throw invalidField('credential_ref', `credential_ref: no credential ${input.credentialRef ?? ''}`);
  return context.credential;
}

/** The request as the invocation keeps it. */
export function requestOf(input: InvokeInput): InvocationRequest {
  return {
    messages: input.messages,
    maxTokens: input.maxTokens,
    ...(input.temperature !== undefined ? { temperature: input.temperature } : {}),
    ...(input.tool ? { tool: input.tool } : {}),
    ...(input.tools ? { tools: input.tools } : {}),
    ...(input.toolChoice !== undefined ? { toolChoice: input.toolChoice } : {}),
    ...(input.stream ? { stream: true } : {}),
    ...(input.metadata ? { metadata: input.metadata } : {}),
  };
}

interface Admission {
  session: Session;
  agent: AgentGate | null;
  credential: CredentialRefInfo;
  price: Rates;
  /** The worst case the worker will reserve for the request as sent. */
  reserve: CapAmounts;
  policyVersion: number;
  agentVersion: number | null;
}

/** Everything a client can get wrong is refused here, before anything is written. */
async function checkAdmission(deps: InvokeDeps, orgId: string, input: InvokeInput): Promise<Admission> {
  if (input.messages.length > deps.maxMessages)
    throw invalidField('messages', `messages: at most ${deps.maxMessages} per invoke`);
  // Read side by side: the ledger by the session id asked for, which the context then confirms
  // is this org's (heldBy never rejects, so an unknown session leaves nothing unhandled).
  const [context, held] = await Promise.all([
    deps.store.invokeContext(orgId, {
      sessionId: input.sessionId,
      agentId: input.agentId ?? null,
      credentialRef: input.credentialRef ?? null,
      model: input.model,
    }),
    heldBy(deps, input.sessionId),
  ]);
  const session = context.session;
  if (!session) throw notFound('session');
  assertOpen(session, deps.clock.now());
  const agent = agentOf(session, input, context);
  const price = effectivePrice(input.model, context.orgPrice);
  if (!price) throw unpricedModel(input.model);
  const reserve = worstCase(input.messages, input.maxTokens, price, input.tools);
  assertFits(session, held, reserve);
  const credential = credentialOf(input, agent, context);
  const { policyVersion, agentVersion } = context;
  return {
    session,
    agent,
    credential,
    price,
    reserve,
    policyVersion,
    agentVersion: agent ? agentVersion : null,
  };
}

/**
 * What the session's calls in flight hold. Without Redis the pre-check counts settled usage only:
 * the invocation is still admitted (the reaper queues it), and the worker's reservation decides.
 */
async function heldBy(deps: InvokeDeps, sessionId: string): Promise<CapAmounts> {
  try {
    return (await deps.ledger.reserved([sessionId])).get(sessionId) ?? NOTHING;
  } catch (err) {
    deps.warn('the cap ledger could not be read; the admission pre-check counts settled usage only', {
      session_id: sessionId,
      err,
    });
    return NOTHING;
  }
}

function newInvocation(ctx: CallContext, input: InvokeInput, admission: Admission, now: Date): Invocation {
  const { session, agent, credential, price, reserve } = admission;
  return {
    id: newId('inv'),
    orgId: ctx.principal.orgId,
    sessionId: session.id,
    agentId: agent?.id ?? null,
    requestedBy: actorOf(ctx.principal),
    status: 'queued',
    model: input.model,
    provider: credential.provider,
    credentialRef: credential.ref,
    request: requestOf(input),
    price: { inputMicrosPerMtok: price.inputMicrosPerMtok, outputMicrosPerMtok: price.outputMicrosPerMtok },
    reservation: { costMicros: reserve.costMicros, tokens: reserve.tokens },
    decision: null,
    approvalId: null,
    output: null,
    usage: null,
    costMicros: 0,
    chargedCalls: 0,
    providerAttempts: 0,
    error: null,
    requestId: ctx.requestId,
    createdAt: now,
    updatedAt: now,
    completedAt: null,
  };
}

/**
 * What the guardian decides on, as admission read it (decide-at-submit.ts). The key that asked
 * authenticated this very request, so it has not lapsed.
 */
const viewAtSubmit = (invocation: Invocation, admission: Admission): GuardianView => ({
  invocation,
  agent: admission.agent,
  session: { status: admission.session.status, expiresAt: admission.session.expiresAt },
  policyVersion: admission.policyVersion,
  credential: admission.credential.sealed,
  requesterRevokedAt: null,
  requesterExpiresAt: null,
});

const requestedEvent = (invocation: Invocation, ctx: CallContext) =>
  newAuditEvent({
    orgId: invocation.orgId,
    actor: actorOf(ctx.principal),
    action: 'llm.invoke.requested',
    resource: { type: 'invocation', id: invocation.id },
    at: invocation.createdAt,
    requestId: ctx.requestId,
    // Never message text: the log is immutable and prompts may hold personal data.
    details: {
      session_id: invocation.sessionId,
      agent_id: invocation.agentId,
      model: invocation.model,
      provider: invocation.provider,
      credential_ref: invocation.credentialRef,
      messages: invocation.request.messages.length,
      max_tokens: invocation.request.maxTokens,
      reserve_micros: invocation.reservation.costMicros,
    },
  });

/**
 * `POST /v1/llm/invoke`: admits the invocation, queues it for the guardian and, when the client
 * asked to wait, waits up to `waitMs` for it to finish. Returns the invocation as it is then.
 */
export async function invoke(
  deps: InvokeDeps,
  ctx: CallContext,
  input: InvokeInput,
  waitMs: number,
  /** Told once the invocation is recorded, before the wait (an Idempotency-Key's interim answer). */
  recorded?: (invocation: Invocation) => Promise<void>,
): Promise<InvocationSummary> {
  const admission = await checkAdmission(deps, ctx.principal.orgId, input);
  const invocation = newInvocation(ctx, input, admission, deps.clock.now());
  const requested = requestedEvent(invocation, ctx);
  const submitted = performance.now();
  if (waitMs > 0 && deps.syncRuns.active) {
    const view = viewAtSubmit(invocation, admission);
    const { agentVersion } = admission;
    const fresh = { invocation, requested, view, agentVersion, trace: input.trace };
    const here = await decidedHere(deps, fresh, waitMs, recorded);
    if (here) return here;
  }
  // Recorded queued, with its audit entry, in one statement.
  await deps.store.insert(invocation, requested);
  if (recorded) await tellRecorded(deps, invocation, recorded);
  // What is left of the client's wait after one for room here (at least a moment: it still waits).
  const waitLeft = waitMs > 0 ? Math.max(1, waitMs - Math.round(performance.now() - submitted)) : 0;
  // Registered before the job exists, so even an instant finish is not missed.
  const waiting = waitLeft > 0 ? deps.waiter.wait(invocation.id, waitLeft) : null;
  if (!(await enqueueInvocation(deps, invocation, input.trace, waiting !== null))) {
    waiting?.cancel();
    return invocation;
  }
  if (!waiting) return invocation;
  return awaitFinished(deps.store, invocation, waiting);
}

/**
 * An invoke whose client waits, decided, recorded and run in this process when it can be
 * (SyncRunner.decideHere); null when it was not recorded here.
 */
async function decidedHere(
  deps: InvokeDeps,
  fresh: FreshInvoke,
  waitMs: number,
  recorded: ((invocation: Invocation) => Promise<void>) | undefined,
): Promise<InvocationSummary | null> {
  // Registered before the invocation exists, so even an instant finish is not missed.
  const waiting = deps.waiter.wait(fresh.invocation.id, waitMs);
  const recordedAs = await deps.syncRuns.decideHere(fresh, waitMs).catch((err: unknown) => {
    waiting.cancel();
    throw err;
  });
  if (!recordedAs) {
    waiting.cancel();
    return null;
  }
  if (recorded) await tellRecorded(deps, recordedAs, recorded);
  return awaitFinished(deps.store, recordedAs, waiting);
}

/** A failure to note the interim answer does not undo the invocation, which is committed. */
async function tellRecorded(
  deps: InvokeDeps,
  invocation: Invocation,
  recorded: (invocation: Invocation) => Promise<void>,
): Promise<void> {
  try {
    await recorded(invocation);
  } catch (err) {
    deps.warn('the interim answer of an idempotent invoke could not be stored', {
      invocation_id: invocation.id,
      err,
    });
  }
}

/**
 * Enqueues the invoke job (its guardian stage decides first). The queued row, already committed,
 * is what the client is promised; the job only wakes a worker. If Redis refuses it (e.g. just after
 * a restart), the reaper enqueues every queued invocation whose job is missing, so the client is
 * answered 202 with an invocation that will run, never 503 for one that would (or a failed one it
 * was not told about). An invoke whose client waits may instead run in this process (syncRuns),
 * which then hands it to the queue itself if it cannot finish it.
 */
async function enqueueInvocation(
  deps: InvokeDeps,
  invocation: Invocation,
  trace: Record<string, string>,
  clientWaits: boolean,
) {
  const job = { invocation_id: invocation.id, org_id: invocation.orgId, trace };
  if (clientWaits && deps.syncRuns.runHere(job)) return true;
  try {
    await deps.queue.submit(job);
    return true;
  } catch (err) {
    deps.warn('the invoke job could not be enqueued; the reaper will enqueue it', {
      invocation_id: invocation.id,
      err,
    });
    return false;
  }
}
