import { MAX_URL_LENGTH } from '../../domain/credentials/provider-host';
import { z } from 'zod';
import { PROVIDERS } from '../../domain/providers';
import { timestamp } from './common';

/** Secrets travel in HTTP headers: visible ASCII only, which also catches a pasted newline. */
const secret = z
  .string()
  .min(1)
  .max(8192)
  .regex(/^[\x21-\x7e]+$/, 'must be visible ASCII characters without spaces or line breaks')
  .meta({ description: 'The provider secret; write-only, never returned, logged or audited.' });

export const StoreCredentialBody = z
  .object({
    name: z.string().trim().min(1).max(100),
    provider: z.enum(PROVIDERS),
    secret,
    base_url: z
      .string()
      .max(MAX_URL_LENGTH)
      .nullable()
      .optional()
      .meta({
        description:
          'API root for the provider (required for openai_compatible). https for public hosts; loopback ' +
          'and private addresses only when CP_ALLOW_PRIVATE_PROVIDER_HOSTS=true.',
      }),
  })
  .strict();

export const RotateCredentialBody = z.object({ secret }).strict();

export const CredentialView = z
  .object({
    credential_ref: z.string(),
    name: z.string(),
    provider: z.enum(PROVIDERS),
    base_url: z.string().nullable(),
    secret_hint: z.string().meta({
      description: '"…" and the last 4 characters of the secret (just "…" for secrets under 8 characters).',
    }),
    version: z.number().int(),
    created_at: timestamp,
    rotated_at: timestamp.nullable(),
  })
  .meta({ id: 'Credential' });
