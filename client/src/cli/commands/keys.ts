import { Command, Option } from 'commander';
import type { Key } from '../../types';
import { action } from '../call';
import { record, table, when, list } from '../format';
import { fetchPage, pageFlags, showPage, type PageOptions } from '../list-page';
import { integer, words } from '../parsers';
import type { RunState } from '../state';

const keyRows = (keys: Key[]) =>
  table(
    ['id', 'name', 'prefix', 'scopes', 'created_at', 'expires_at', 'last_used_at', 'revoked_at'],
    keys.map((k) => [
      k.id,
      k.name,
      k.prefix,
      list(k.scopes),
      when(k.created_at),
      when(k.expires_at),
      when(k.last_used_at),
      when(k.revoked_at),
    ]),
    'no keys',
  );

const keyRecord = (k: Key, extra: [string, string][] = []) =>
  record([
    ['id', k.id],
    ['name', k.name],
    ...extra,
    ['prefix', k.prefix],
    ['scopes', list(k.scopes)],
    ['expires_at', when(k.expires_at)],
    ['revoked_at', when(k.revoked_at)],
  ]);

export function keysCommand(state: RunState): Command {
  const keys = new Command('keys').description('API keys (org:admin)');

  keys
    .command('create')
    .description('mint a key; its secret is shown this once')
    .requiredOption('--name <name>', 'what the key is for')
    .requiredOption(
      '--scopes <scopes>',
      'scopes or one preset (read, invoke, admin); comma-separated or repeated',
      words,
    )
    .addOption(new Option('--expires-in-days <days>', 'lifetime, 1..365 (default 90)').argParser(integer))
    .action(
      action<{ name: string; scopes: string[]; expiresInDays?: number }>(state, async (call) => {
        const { name, scopes, expiresInDays } = call.options;
        const key = await call.client().keys.create({ name, scopes, expires_in_days: expiresInDays });
        return call.show(
          key,
          () => `${keyRecord(key, [['key', key.key]])}\nThe key is shown this once: keep it now.`,
        );
      }),
    );

  pageFlags(keys.command('list').description('the org’s keys, newest first')).action(
    action<PageOptions>(state, async (call) => {
      const page = await fetchPage(call.client(), '/v1/keys', {}, call.options);
      return showPage(call, page, keyRows);
    }),
  );

  keys
    .command('revoke')
    .description('revoke a key at once (revoking twice is fine)')
    .argument('<id>', 'the key’s id')
    .action(
      action(state, async (call) => {
        const key = await call.client().keys.revoke(call.args[0]!);
        return call.show(key, () => keyRecord(key));
      }),
    );

  return keys;
}
