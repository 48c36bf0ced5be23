import { z } from 'zod';
import {
  createPolicy,
  deletePolicy,
  getPolicy,
  listPolicies,
  replacePolicy,
  type PolicyDeps,
} from '../../domain/policy/policy-use-cases';
import { turnsEvery } from '../../domain/next-turn';
import { checkPatternsInTurns } from '../../domain/policy/limits';
import { invalidField, rateLimited } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import { previewPolicy, type PolicyPreview } from '../../domain/policy/preview-policy';
import type { Infra } from '../../infra/container';
import { callOf } from '../http/call-context';
import { defineRoute, needs } from '../http/route';
import { presentPolicy } from '../presenters';
import { listOf, pageQuery, pageReply, pageRequest } from '../schemas/common';
import {
  PolicyBody,
  PolicyPreviewBody,
  PolicyPreviewView,
  PolicyView,
  ReplacePolicyBody,
  toFields,
} from '../schemas/policies.schemas';
import { InFlightGate } from '../http/in-flight-gate';

/** A preview replays up to 10,000 actions on the API's event loop, for up to 5 s. */
const previews = new InFlightGate('policy preview', 1, 2);

const read = needs('policies:read');
const write = needs('policies:write');
const policyPath = '/v1/policies/{id}';
const notFound = { description: 'no such policy in this org' };

const policyDeps = (infra: Infra): PolicyDeps => ({ uow: infra.uow, clock: infra.clock });

/** A field of a body as received (not yet checked by its schema): undefined when it is not an object. */
const fieldOf = (raw: unknown, name: string): unknown =>
  typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>)[name] : undefined;
const rulesIn = (raw: unknown) => fieldOf(raw, 'rules');

/** Whether a body's rules (as received) hold a pattern to check. */
const holdsPatterns = (rules: unknown): boolean =>
  Array.isArray(rules) && rules.some((r: unknown) => typeof fieldOf(r, 'pattern') === 'string');

/**
 * Checks a policy body's patterns before its schema (checkPatternsInTurns) as the org's work:
 * refused 429 while the org is past its share of this process's time for it (Infra's
 * patternCheckTime), and charged what compiling took. Writes and previews come at the rate of
 * requests, each with up to 50 of the largest patterns (about 80 ms): a loop of them by one org
 * filled the API's event loop (QA).
 */
async function checkPatterns(rules: unknown, principal: Principal | null, infra: Infra): Promise<void> {
  if (!principal || !holdsPatterns(rules)) return;
  const { orgId } = principal;
  const time = infra.patternCheckTime;
  const wait = time.waitMs(orgId);
  if (wait > 0)
    throw rateLimited(
      `the org used its share of this server's time for compiling policy patterns (${time.msPerSecond} ms ` +
        'a second): send fewer or simpler patterns',
      wait / 1000,
    );
  time.charge(orgId, await checkPatternsInTurns(rules, turnsEvery()));
}

const presentPreview = (p: PolicyPreview) => ({
  since: p.since.toISOString(),
  until: p.until.toISOString(),
  actions_replayed: p.actionsReplayed,
  truncated: p.truncated,
  changed: { total: p.changed.total, by_verdict: p.changed.byVerdict },
  examples: p.examples.map((e) => ({ invocation_id: e.invocationId, before: e.before, after: e.after })),
});

export const policyRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/policies',
    summary:
      "Create a policy; the org's policy_version goes up by one. Compiling a body's patterns is charged to " +
      "the org's share of the server's time for it: past it, a body with patterns is a 429 rate_limited " +
      'with Retry-After',
    tag: 'policies',
    access: write,
    body: PolicyBody,
    prepare: ({ raw, principal, infra }) => checkPatterns(rulesIn(raw), principal, infra),
    responses: { 201: { description: 'created', schema: PolicyView } },
    handle: async (input) => {
      const { policy, policyVersion } = await createPolicy(
        policyDeps(input.infra),
        callOf(input),
        toFields(input.body),
      );
      return { status: 201, body: presentPolicy(policy, policyVersion) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/policies/preview',
    summary:
      "Impact preview: replay the org's recorded invocations of a window through its policies with and " +
      'without a draft policy and count the verdicts that would change; writes nothing. Modified ' +
      'invocations replay as modified (the original request is not kept). At most 10,000 actions and 5 s of ' +
      'replaying (truncated beyond either); one preview per org, and two in all, run at once per API ' +
      'process: one more is a 429 rate_limited with Retry-After: 1. A draft that would take the ' +
      "org's enabled patterns past their limit (as on create) is a 400 validation_error naming policy.rules; " +
      "the draft's patterns are charged as on create",
    tag: 'policies',
    access: read,
    body: PolicyPreviewBody,
    prepare: async ({ raw, principal, infra }) => {
      // A preview refused for the gate is refused before its draft's patterns are compiled.
      if (principal) previews.assertRoom(principal.orgId);
      await checkPatterns(rulesIn(fieldOf(raw, 'policy')), principal, infra);
    },
    responses: { 200: { description: 'the verdicts the draft would change', schema: PolicyPreviewView } },
    handle: async (input) => {
      const { infra, body } = input;
      const call = callOf(input);
      const preview = await previews.run(call.principal.orgId, () =>
        previewPolicy(
          {
            versions: infra.policySets,
            policies: infra.compiledPolicies,
            evaluations: infra.evaluationRunner,
            history: infra.actionHistory,
            clock: infra.clock,
          },
          call,
          {
            draft: toFields(body.policy),
            since: new Date(body.since),
            until: body.until ? new Date(body.until) : undefined,
          },
        ),
      );
      return { status: 200, body: presentPreview(preview) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/policies',
    summary: 'List the policies of the org, newest first',
    tag: 'policies',
    access: read,
    query: z.object(pageQuery).strict(),
    responses: { 200: { description: 'a page of policies', schema: listOf(PolicyView) } },
    handle: async (input) => {
      const page = await listPolicies(
        policyDeps(input.infra),
        callOf(input),
        pageRequest(input.query, 'policies'),
      );
      return pageReply(page, (p) => presentPolicy(p, page.policyVersion), 'policies');
    },
  }),
  defineRoute({
    method: 'GET',
    path: policyPath,
    summary: 'Get one policy',
    tag: 'policies',
    access: read,
    responses: { 200: { description: 'the policy', schema: PolicyView }, 404: notFound },
    handle: async (input) => {
      const { policy, policyVersion } = await getPolicy(
        policyDeps(input.infra),
        callOf(input),
        input.params.id ?? '',
      );
      return { status: 200, body: presentPolicy(policy, policyVersion) };
    },
  }),
  defineRoute({
    method: 'PUT',
    path: policyPath,
    summary:
      "Replace a policy: its version and the org's policy_version go up by one, unless nothing changed. " +
      "A body's patterns are charged as on create (a 429 rate_limited with Retry-After past the share)",
    tag: 'policies',
    access: write,
    body: ReplacePolicyBody,
    prepare: ({ raw, principal, infra }) => checkPatterns(rulesIn(raw), principal, infra),
    responses: {
      200: { description: 'the policy', schema: PolicyView },
      404: notFound,
      409: {
        description: 'conflict: the policy is no longer at the version sent (it changed since it was read)',
      },
    },
    handle: async (input) => {
      const id = input.params.id ?? '';
      if (input.body.id !== undefined && input.body.id !== id)
        throw invalidField('id', "id: the body's id is another policy's than the path's");
      const { policy, policyVersion } = await replacePolicy(
        policyDeps(input.infra),
        callOf(input),
        id,
        toFields(input.body),
        input.body.version,
      );
      return { status: 200, body: presentPolicy(policy, policyVersion) };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: policyPath,
    summary: "Delete a policy; the org's policy_version goes up by one",
    tag: 'policies',
    access: write,
    responses: { 204: { description: 'deleted' }, 404: notFound },
    handle: async (input) => {
      await deletePolicy(policyDeps(input.infra), callOf(input), input.params.id ?? '');
      return { status: 204 };
    },
  }),
];
