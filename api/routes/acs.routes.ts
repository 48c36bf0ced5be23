import { submitEvaluation, type SubmitEvaluationDeps } from '../../domain/policy/submit-evaluation';
import type { Infra } from '../../infra/container';
import { callOf } from '../http/call-context';
import { defineRoute, needs } from '../http/route';
import { presentDecision } from '../presenters';
import { actionOf, EvaluateBody } from '../schemas/acs.schemas';
import { DecisionView } from '../schemas/invocations.schemas';

/** The API waits this long for a guardian worker (a decision takes milliseconds). */
const EVALUATE_WAIT_MS = 10_000;

const evaluateDeps = (infra: Infra): SubmitEvaluationDeps => ({
  uow: infra.uow,
  sessions: infra.sessions,
  relay: infra.evaluations,
  enqueue: (job) => infra.queues.enqueue('acs.evaluate', job, job.evaluation_id),
  waiter: infra.completions,
  clock: infra.clock,
  waitMs: EVALUATE_WAIT_MS,
});

export const acsRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/acs/evaluate',
    summary:
      'Decide an action with the org policies (the engine that decides every invoke), through the guardian queue; ' +
      'the decision and its audit entry are written. The answer carries the whole modified action; the decision ' +
      'log keeps it without messages.',
    tag: 'guardian',
    access: needs('acs:evaluate'),
    body: EvaluateBody,
    responses: {
      200: { description: 'the decision', schema: DecisionView },
      400: {
        description:
          'invalid_json or validation_error (with details), also when agent_id is not the agent of session_id',
      },
      404: { description: 'the agent or session is not in this org' },
      503: {
        description:
          'no guardian worker decided within 10 s: the request was withdrawn, so nothing was recorded and ' +
          'the evaluation can be retried. Rarely (a worker took the request, then died while recording it) ' +
          'the message names the decision id instead: it may still be recorded later, so look it up in the ' +
          'decision log before retrying',
      },
    },
    handle: async (input) => {
      const { agent_id, session_id, action } = input.body;
      const decision = await submitEvaluation(
        evaluateDeps(input.infra),
        callOf(input),
        {
          agentId: agent_id ?? null,
          sessionId: session_id ?? null,
          action: actionOf(action),
        },
        input.trace,
      );
      return {
        status: 200,
        body: presentDecision(decision),
      };
    },
  }),
];
