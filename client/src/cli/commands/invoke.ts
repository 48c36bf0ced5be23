import { Command, Option } from 'commander';
import type { InvokeBody } from '../../invoke';
import type { Invocation } from '../../types';
import { action, type Call } from '../call';
import { EXIT, UsageError } from '../exit-codes';
import { usd } from '../format';
import { integer, jsonArray, jsonObject, number, positiveNumber } from '../parsers';
import { progress, type Progress } from '../spinner';
import type { RunState } from '../state';

interface InvokeOptions {
  session: string;
  model: string;
  maxTokens: number;
  system?: string;
  messages?: InvokeBody['messages'];
  temperature?: number;
  credentialRef?: string;
  agent?: string;
  metadata?: Record<string, unknown>;
  waitSeconds: number;
  timeout: number;
}

export function invokeCommand(state: RunState): Command {
  return new Command('invoke')
    .description('run a governed completion and print its output (waits through approvals)')
    .argument('[prompt]', 'the user message (or give --messages)')
    .requiredOption('--session <id>', 'session_id: the session that pays for the call')
    .requiredOption('--model <model>', 'the model to call')
    .addOption(
      new Option('--max-tokens <n>', 'the completion’s output limit')
        .argParser(integer)
        .makeOptionMandatory(),
    )
    .option('--system <text>', 'a system message before the prompt')
    .option('--messages <json>', 'the whole conversation, a JSON array of {role, content}', jsonArray)
    .addOption(new Option('--temperature <t>').argParser(number))
    .option('--credential-ref <ref>', 'the credential to call with (default: the agent’s first)')
    .option('--agent <id>', 'agent_id, when the session has none')
    .option('--metadata <json>', 'a JSON object kept with the invocation', jsonObject)
    .addOption(
      // Short: the server holds a request until the end, not until a pause for approval, and a
      // person should learn soon that the call waits for them.
      new Option('--wait-seconds <n>', 'how long the server may hold each request')
        .argParser(integer)
        .default(2),
    )
    .addOption(
      // Not 0: the call is submitted (and billed) either way, and this command has no other way
      // to hand back an invocation it did not wait for than exit 4.
      new Option('--timeout <seconds>', 'how long to wait in all for the end, more than 0')
        .argParser(positiveNumber)
        .default(300),
    )
    .action(action<InvokeOptions>(state, runInvoke));
}

async function runInvoke(call: Call<InvokeOptions>): Promise<number> {
  const o = call.options;
  const body: InvokeBody = {
    session_id: o.session,
    model: o.model,
    messages: messagesOf(o, call.args[0]),
    max_tokens: o.maxTokens,
    temperature: o.temperature,
    credential_ref: o.credentialRef,
    agent_id: o.agent,
    metadata: o.metadata,
  };
  const cp = call.client();
  const spinner = progress(call.io, `invoking ${o.model}`);
  let invocation: Invocation;
  try {
    invocation = await cp.invoke(body, {
      waitSeconds: o.waitSeconds,
      timeoutMs: o.timeout * 1000,
      signal: call.io.signal,
      onUpdate: announcer(call, spinner),
    });
  } finally {
    spinner.stop();
  }
  return report(call, invocation);
}

/** The prompt as one user message (after an optional system one), or the JSON conversation. */
function messagesOf(o: InvokeOptions, prompt: string | undefined): InvokeBody['messages'] {
  if (o.messages !== undefined && prompt !== undefined)
    throw new UsageError('give a prompt or --messages, not both');
  if (o.messages !== undefined) return o.messages;
  if (prompt === undefined) throw new UsageError('give a prompt or --messages');
  const system = o.system === undefined ? [] : [{ role: 'system' as const, content: o.system }];
  return [...system, { role: 'user', content: prompt }];
}

/**
 * Keeps the spinner's text on the latest status, and says once, on stderr even without a
 * terminal, that the call waits for a person: which approval to act on.
 */
function announcer(call: Call<InvokeOptions>, spinner: Progress) {
  let announced = false;
  return (invocation: Invocation) => {
    spinner.update(`${invocation.status} ${invocation.id}`);
    if (invocation.status !== 'awaiting_approval' || announced) return;
    announced = true;
    spinner.note(
      `awaiting_approval: approval ${invocation.approval_id} (invocation ${invocation.id}); ` +
        `waiting for: control-plane approvals approve ${invocation.approval_id}`,
    );
  };
}

/** The output on stdout, the outcome on stderr; exit 4 unless the invocation succeeded. */
function report(call: Call<InvokeOptions>, invocation: Invocation): number {
  const succeeded = invocation.status === 'succeeded';
  if (call.json) call.out(JSON.stringify(invocation, null, 2));
  else if (succeeded) call.out(invocation.output?.content ?? '');
  call.err(outcome(invocation));
  return succeeded ? EXIT.ok : EXIT.unsuccessful;
}

function outcome(inv: Invocation): string {
  const head = `${inv.status} ${inv.id}`;
  if (inv.status === 'succeeded') {
    const usage = inv.usage
      ? `${inv.usage.input_tokens} input + ${inv.usage.output_tokens} output tokens, `
      : '';
    return `${head}: ${usage}${usd(inv.cost_usd)}`;
  }
  if (inv.error) return `${head}: ${inv.error.error_code}: ${inv.error.message}`;
  const reasons = inv.decision?.reasons.map((r) => `${r.code}: ${r.message}`) ?? [];
  if (reasons.length) return `${head}: ${reasons.join('; ')}`;
  return inv.status === 'denied' || inv.status === 'failed' || inv.status === 'cancelled'
    ? head
    : `${head}: not finished when --timeout ran out`;
}
