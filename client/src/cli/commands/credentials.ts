import { Command } from 'commander';
import { action } from '../call';
import { UsageError } from '../exit-codes';
import { record, when } from '../format';
import type { RunState } from '../state';

interface AddOptions {
  name: string;
  provider: 'openai' | 'anthropic' | 'openai_compatible' | 'mock';
  secret?: string;
  secretEnv?: string;
}

export function credentialsCommand(state: RunState): Command {
  const credentials = new Command('credentials').description('provider credentials (credentials:write)');

  credentials
    .command('add')
    .description('store a provider secret (encrypted at rest, never shown again)')
    .requiredOption('--name <name>', 'a name for people')
    .requiredOption('--provider <provider>', 'openai, anthropic, openai_compatible or mock')
    .option('--secret <secret>', 'the provider secret (visible to other local users in the process list)')
    .option('--secret-env <var>', 'read the secret from this environment variable instead')
    .option('--provider-base-url <url>', 'the provider’s API root (required for openai_compatible)')
    .action(
      action<AddOptions & { providerBaseUrl?: string }>(state, async (call) => {
        const { name, provider, providerBaseUrl } = call.options;
        const secret = secretOf(call.options, call.io.env);
        const cp = call.client();
        const added = await cp.credentials.add({ name, provider, secret, base_url: providerBaseUrl });
        return call.show(added, () =>
          record([
            ['credential_ref', added.credential_ref],
            ['name', added.name],
            ['provider', added.provider],
            ['base_url', added.base_url],
            ['secret_hint', added.secret_hint],
            ['version', added.version],
            ['created_at', when(added.created_at)],
          ]),
        );
      }),
    );

  return credentials;
}

/** Exactly one source for the secret: a flag, or an environment variable that keeps it out of `ps`. */
function secretOf(options: AddOptions, env: Record<string, string | undefined>): string {
  if (options.secret !== undefined && options.secretEnv !== undefined)
    throw new UsageError('give --secret or --secret-env, not both');
  if (options.secret !== undefined) return options.secret;
  if (options.secretEnv === undefined) throw new UsageError('give the secret with --secret or --secret-env');
  const secret = env[options.secretEnv];
  if (!secret) throw new UsageError(`the environment variable ${options.secretEnv} is not set`);
  return secret;
}
