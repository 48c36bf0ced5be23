import { evaluateAction } from '../domain/policy/evaluate-action';
import type { EvaluationJob } from '../domain/jobs';
import type { Infra } from '../infra/container';
import { inSpan } from '../infra/telemetry';

/** The `acs.evaluate` job, in a span under the request's trace. */
export const evaluationProcessor = (payload: EvaluationJob, infra: Infra) =>
  inSpan(
    'acs.evaluate',
    'consumer',
    payload.trace,
    () =>
      evaluateAction(
        {
          relay: infra.evaluations,
          policies: infra.compiledPolicies,
          policyVersion: (orgId) => infra.policySets.policyVersion(orgId),
          decisions: infra.decisionLog,
          announce: (id) => infra.completions.announce(id),
          runner: infra.evaluationRunner,
          clock: infra.clock,
        },
        payload.evaluation_id,
      ),
    { 'decision.id': payload.evaluation_id },
  );
