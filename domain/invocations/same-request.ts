import { invalidField } from '../errors';
import type { DecisionLog } from '../policy/decision-log.port';
import { submittedDigest } from './evaluate-invocation';
import type { Invocation } from './invocation';

/** What a resumed request asks, to be held against the invocation it names. */
export type AskedRequest = Pick<Invocation, 'model' | 'request'>;

/**
 * The digest of the request the invocation was submitted with. Until the guardian decides, its row
 * holds that request; once it has, a modify verdict (a redaction, a clamp) may have rewritten the
 * row, and the decision log kept the digest of what was submitted. Null when nothing says (a
 * decision recorded without its digest): the request cannot be checked.
 */
async function digestAtSubmit(
  decisions: Pick<DecisionLog, 'get'>,
  found: Invocation,
): Promise<string | null> {
  if (!found.decision) return submittedDigest(found);
  return (await decisions.get(found.orgId, found.decision.id))?.actionDigest ?? null;
}

/**
 * A chat completion resumed with `X-Invocation-Id` must be the request that started the
 * invocation (its model, messages, max_tokens, tools and tool_choice): an id reused by mistake
 * would otherwise hand its client another prompt's answer, and charge it to that session.
 */
export async function assertSameRequest(
  decisions: Pick<DecisionLog, 'get'>,
  found: Invocation,
  asked: AskedRequest,
): Promise<void> {
  const submitted = await digestAtSubmit(decisions, found);
  if (submitted === null || submitted === submittedDigest({ ...found, ...asked })) return;
  throw invalidField(
    'X-Invocation-Id',
    `X-Invocation-Id: invocation ${found.id} was started by another request (its model, messages, max_tokens, ` +
      'tools or tool_choice differ); send that request again to resume it, or leave X-Invocation-Id out to start a new call',
  );
}
