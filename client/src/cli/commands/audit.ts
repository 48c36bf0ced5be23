import { Command, Option } from 'commander';
import type { ControlPlane } from '../../control-plane';
import { sleep } from '../../retry';
import { dataOf } from '../../transport';
import type { AuditEntry } from '../../types';
import { action, type Call } from '../call';
import { EXIT } from '../exit-codes';
import { record, table, when } from '../format';
import { pageSize, pollSeconds } from '../parsers';
import { progress } from '../spinner';
import type { RunState } from '../state';

interface TailOptions {
  limit: number;
  action?: string;
  follow?: boolean;
  interval: number;
}

export function auditCommand(state: RunState): Command {
  const audit = new Command('audit').description('the org’s hash-chained audit log (audit:read)');

  audit
    .command('tail')
    .description('the newest entries, oldest first; --json prints one entry per line')
    .addOption(new Option('--limit <n>', 'how many (1..100)').argParser(pageSize).default(20))
    .option('--action <action>', 'only this action (e.g. key.created)')
    .option('-f, --follow', 'keep printing new entries until interrupted')
    .addOption(
      new Option('--interval <seconds>', 'how often --follow asks, at least 1')
        .argParser(pollSeconds)
        .default(2),
    )
    .action(action<TailOptions>(state, tail));

  audit
    .command('verify')
    .description('recompute the chain; exit 4 when it is broken')
    .action(action(state, verify));

  return audit;
}

async function tail(call: Call<TailOptions>): Promise<number> {
  const cp = call.client();
  const { limit, action: filter, follow, interval } = call.options;
  const newest = (await dataOf(cp.raw.GET('/v1/audit', { params: { query: { limit, action: filter } } })))
    .data;
  if (newest.length === 0 && !call.json)
    call.err(filter === undefined ? 'no audit entries yet' : `no audit entries with action ${filter} yet`);
  let lastSeq = print(call, newest, 0);
  while (follow) {
    try {
      await sleep(interval * 1000, call.io.signal);
    } catch {
      return EXIT.ok; // interrupted: the way --follow is meant to end
    }
    lastSeq = print(call, await newerThan(cp, lastSeq, filter), lastSeq);
  }
  return EXIT.ok;
}

/** Entries after `seq`, walking pages (newest first) only as far back as needed. */
async function newerThan(cp: ControlPlane, seq: number, filter: string | undefined) {
  const newer: AuditEntry[] = [];
  for await (const entry of cp.audit.list({ action: filter, limit: 100 })) {
    if (entry.seq <= seq) break;
    newer.push(entry);
  }
  return newer;
}

/** Prints entries (given newest first) oldest first; returns the newest seq printed. */
function print(call: Call<TailOptions>, newestFirst: AuditEntry[], lastSeq: number): number {
  if (newestFirst.length === 0) return lastSeq;
  const entries = [...newestFirst].reverse();
  if (call.json) call.out(entries.map((e) => JSON.stringify(e)).join('\n'));
  else
    call.out(
      table(
        ['seq', 'at', 'actor', 'action', 'resource', 'outcome'],
        entries.map((e) => [
          e.seq,
          when(e.at),
          `${e.actor.type}:${e.actor.id}`,
          e.action,
          `${e.resource.type}:${e.resource.id}`,
          e.outcome,
        ]),
      ),
    );
  return newestFirst[0]!.seq;
}

/**
 * The API verifies the whole chain in one request (it takes no range), so there is no partial
 * progress to show: a spinner while it works, then the count it checked.
 */
/** How long the chain is, from its signed head; null when there is no head yet (or it is unreadable). */
const chainLength = (cp: ControlPlane): Promise<number | null> =>
  cp.audit.head().then(
    (head) => head.seq,
    () => null,
  );

/**
 * The API verifies the whole chain in one request, so the progress shown is what is known: how
 * many entries it is checking, and for how long it has been at it.
 */
async function verify(call: Call): Promise<number> {
  const cp = call.client();
  const entries = call.io.isTTY ? await chainLength(cp) : null;
  const what = `verifying the audit chain${entries === null ? '' : `: ${entries} entries`}`;
  const spinner = progress(call.io, what);
  const started = Date.now();
  const ticking = setInterval(
    () => spinner.update(`${what}, ${Math.round((Date.now() - started) / 1000)} s`),
    1000,
  );
  const result = await cp.audit.verify().finally(() => {
    clearInterval(ticking);
    spinner.stop();
  });
  call.show(result, () =>
    record([
      ['valid', result.valid],
      ['entries_checked', result.entries_checked],
      ['head_seq', result.head.seq],
      ['head_hash', result.head.hash],
      ['first_broken_seq', result.first_broken_seq],
    ]),
  );
  return result.valid ? EXIT.ok : EXIT.unsuccessful;
}
