import { Command } from 'commander';
import type { Approval } from '../../types';
import { action, type Call } from '../call';
import { record, table, usd, when } from '../format';
import { fetchPage, pageFlags, showPage, type PageOptions } from '../list-page';
import type { RunState } from '../state';

interface ListOptions extends PageOptions {
  status?: Approval['status'];
  session?: string;
  agent?: string;
}

const approvalRows = (approvals: Approval[]) =>
  table(
    ['id', 'status', 'model', 'estimated_cost_usd', 'invocation_id', 'session_id', 'votes', 'expires_at'],
    approvals.map((a) => [
      a.id,
      a.status,
      a.summary.model,
      usd(a.summary.estimated_cost_usd),
      a.invocation_id,
      a.session_id,
      `${a.votes.filter((v) => v.decision === 'approve').length}/${a.approvers_required}`,
      when(a.expires_at),
    ]),
    'no approvals',
  );

const approvalRecord = (a: Approval) =>
  record([
    ['id', a.id],
    ['status', a.status],
    ['invocation_id', a.invocation_id],
    ['model', a.summary.model],
    [
      'votes',
      a.votes.map((v) => `${v.decision} by ${v.by.id}${v.comment ? `: ${v.comment}` : ''}`).join('\n'),
    ],
    ['resolved_at', when(a.resolved_at)],
  ]);

export function approvalsCommand(state: RunState): Command {
  const approvals = new Command('approvals').description('human approvals of paused invocations');

  pageFlags(
    approvals
      .command('list')
      .description('approvals, newest first (policies:read)')
      .option('--status <status>', 'pending, approved, rejected, expired or cancelled')
      .option('--session <id>', 'session_id: only this session’s')
      .option('--agent <id>', 'agent_id: only this agent’s'),
  ).action(
    action<ListOptions>(state, async (call) => {
      const { status, session, agent } = call.options;
      const filters = { status, session_id: session, agent_id: agent };
      const page = await fetchPage(call.client(), '/v1/approvals', filters, call.options);
      return showPage(call, page, approvalRows);
    }),
  );

  for (const decision of ['approve', 'reject'] as const)
    approvals
      .command(decision)
      .description(
        `${decision} a pending approval (policies:write); the invocation then resumes or is denied`,
      )
      .argument('<id>', 'the approval’s id')
      .option('--comment <text>', 'kept with the vote')
      .action(action<{ comment?: string }>(state, (call) => vote(call, decision)));

  return approvals;
}

async function vote(call: Call<{ comment?: string }>, decision: 'approve' | 'reject'): Promise<number> {
  const body = call.options.comment === undefined ? {} : { comment: call.options.comment };
  const approval = await call.client().approvals[decision](call.args[0]!, body);
  return call.show(approval, () => approvalRecord(approval));
}
