import { z } from 'zod';
import { isoInput, pageQuery, sinceBeforeUntil, timestamp } from './common';

const id = z.string().max(100);

export const AuditQuery = z
  .object({
    action: z.string().max(100).optional(),
    actor_id: id.optional(),
    resource_id: id.optional(),
    since: isoInput.optional(),
    until: isoInput.optional().meta({ description: 'Exclusive; after since.' }),
    ...pageQuery,
  })
  .strict()
  .superRefine(sinceBeforeUntil);

export const AuditEntry = z
  .object({
    id: z.string(),
    seq: z.number().int(),
    at: timestamp,
    actor: z.object({ type: z.enum(['api_key', 'user', 'system']), id: z.string() }).meta({
      description:
        'who made the change: a key, a person, or the service itself (`system`/`system`); a caller not signed in, such as a failed login, is `system`/`anonymous`',
    }),
    action: z.string(),
    resource: z.object({ type: z.string(), id: z.string() }),
    outcome: z.string(),
    details: z.record(z.string(), z.unknown()),
    request_id: z.string().nullable(),
    prev_hash: z.string(),
    hash: z.string(),
  })
  .meta({ id: 'AuditEntry' });

export const AuditVerification = z.object({
  valid: z.boolean(),
  entries_checked: z.number().int(),
  head: z.object({ seq: z.number().int(), hash: z.string() }),
  first_broken_seq: z
    .number()
    .int()
    .nullable()
    .meta({
      description:
        'The first entry verify cannot vouch for, null when the log is intact. An entry changed in place, or out ' +
        'of its place, is named itself; a missing entry, by the entry after the gap (whose link fails); entries ' +
        'cut from the end, by the first one missing (head is then the last entry left). A rewrite with recomputed ' +
        'hashes shows only at the next signed head, so it is reported from the entry after the last signed head ' +
        'the chain still passes: any entry from there on may have been rewritten, and the entry named may itself ' +
        'look intact. A last entry that carries no signed checkpoint is named itself. Entries the service sealed ' +
        'after the chain was changed behind it are reported from the first of them for good, even once removed ' +
        'and the change undone. Why it failed is logged for ' +
        'the operators (reason).',
    }),
});

export const AuditSignedHead = z
  .object({
    org_id: z.string(),
    seq: z.number().int(),
    hash: z.string(),
    key_id: z.string(),
    signature: z.string().meta({ description: 'HMAC-SHA256 (hex) over "<org_id>\\n<seq>\\n<hash>"' }),
    signed_at: timestamp,
  })
  .meta({ id: 'AuditSignedHead' });
