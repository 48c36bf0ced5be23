import { Command, Option } from 'commander';
import type { Session } from '../../types';
import { action } from '../call';
import { ofLimit, record, usd, when } from '../format';
import { integer, jsonObject, number } from '../parsers';
import type { RunState } from '../state';

interface OpenOptions {
  agent?: string;
  maxCostUsd: number;
  maxCalls?: number;
  maxTokens?: number;
  ttl?: number;
  metadata?: Record<string, unknown>;
}

/** A session's caps beside what it has used so far. */
export const sessionRecord = (s: Session) =>
  record([
    ['id', s.id],
    ['status', s.status],
    ['agent_id', s.agent_id],
    ['cost_usd', `${usd(s.usage.cost_usd)} / ${usd(s.limits.max_cost_usd)}`],
    ['reserved_usd', usd(s.usage.reserved_usd)],
    ['calls', ofLimit(s.usage.calls, s.limits.max_calls)],
    ['tokens', ofLimit(s.usage.input_tokens + s.usage.output_tokens, s.limits.max_tokens)],
    ['created_at', when(s.created_at)],
    ['expires_at', when(s.expires_at)],
    ['closed_at', when(s.closed_at)],
  ]);

export function sessionsCommand(state: RunState): Command {
  const sessions = new Command('sessions').description('cost-capped sessions');

  sessions
    .command('open')
    .description('open a session with hard caps (sessions:write)')
    .option('--agent <id>', 'agent_id: the agent the session acts for')
    .addOption(
      new Option('--max-cost-usd <usd>', 'hard cap on settled cost').argParser(number).makeOptionMandatory(),
    )
    .addOption(new Option('--max-calls <n>', 'hard cap on calls that reach the provider').argParser(integer))
    .addOption(new Option('--max-tokens <n>', 'hard cap on input plus output tokens').argParser(integer))
    .addOption(
      new Option('--ttl <seconds>', 'ttl_seconds: lifetime, 60..604800 (default 3600)').argParser(integer),
    )
    .option('--metadata <json>', 'a JSON object kept with the session', jsonObject)
    .action(
      action<OpenOptions>(state, async (call) => {
        const { agent, maxCostUsd, maxCalls, maxTokens, ttl, metadata } = call.options;
        const session = await call.client().sessions.open({
          agent_id: agent,
          max_cost_usd: maxCostUsd,
          max_calls: maxCalls,
          max_tokens: maxTokens,
          ttl_seconds: ttl,
          metadata,
        });
        return call.show(session, () => sessionRecord(session));
      }),
    );

  sessions
    .command('show')
    .description('a session’s caps and live usage')
    .argument('<id>', 'the session’s id')
    .action(
      action(state, async (call) => {
        const session = await call.client().sessions.get(call.args[0]!);
        return call.show(session, () => sessionRecord(session));
      }),
    );

  sessions
    .command('close')
    .description('close a session: it takes no more invokes')
    .argument('<id>', 'the session’s id')
    .action(
      action(state, async (call) => {
        const session = await call.client().sessions.close(call.args[0]!);
        return call.show(session, () => sessionRecord(session));
      }),
    );

  return sessions;
}
