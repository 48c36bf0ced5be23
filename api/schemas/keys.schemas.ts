import { z } from 'zod';
import { KEY_LIFETIME_DAYS } from '../../domain/keys/build-key';
import { timestamp } from './common';

export const MintKeyBody = z
  .object({
    name: z.string().trim().min(1).max(100),
    scopes: z.array(z.string().max(64)).min(1).max(20).meta({
      description: 'Scope strings, or exactly one preset name (read, invoke, admin), expanded at creation.',
    }),
    expires_in_days: z.number().int().min(KEY_LIFETIME_DAYS.min).max(KEY_LIFETIME_DAYS.max).optional(),
  })
  .strict();

export const RotateKeyBody = z
  .object({ grace_seconds: z.number().int().min(0).max(86_400).optional() })
  .strict();

export const Key = z
  .object({
    id: z.string(),
    name: z.string(),
    prefix: z.string(),
    scopes: z.array(z.string()),
    created_at: timestamp,
    expires_at: timestamp,
    last_used_at: timestamp.nullable(),
    revoked_at: timestamp.nullable().meta({
      description:
        'When the key stops working. A key rotated with grace_seconds shows the end of its grace, in the future while it still works.',
    }),
  })
  .meta({ id: 'Key' });

export const KeyWithSecret = Key.extend({
  key: z.string().meta({ description: 'The csk_ secret: shown this once, stored only as a hash.' }),
}).meta({ id: 'KeyWithSecret' });
