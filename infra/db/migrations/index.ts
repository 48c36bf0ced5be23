import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261122000001Foundation } from './Migration20261122000001Foundation';
import { Migration20261122000002Idempotency } from './Migration20261122000002Idempotency';
import { Migration20261122000003Inventory } from './Migration20261122000003Inventory';
import { Migration20261122000004Invocations } from './Migration20261122000004Invocations';
import { Migration20261123000001ProviderAttempts } from './Migration20261123000001ProviderAttempts';
import { Migration20261124000001IdempotencyPrincipal } from './Migration20261124000001IdempotencyPrincipal';
import { Migration20261124000003CredentialAadVersion } from './Migration20261124000003CredentialAadVersion';
import { Migration20261125000001CheckpointResign } from './Migration20261125000001CheckpointResign';
import { Migration20261126000002DecisionLog } from './Migration20261126000002DecisionLog';
import { Migration20261126000001Policies } from './Migration20261126000001Policies';
import { Migration20261127000001Approvals } from './Migration20261127000001Approvals';
import { Migration20261127000002Webhooks } from './Migration20261127000002Webhooks';
import { Migration20261128000001PendingDeliveries } from './Migration20261128000001PendingDeliveries';
import { Migration20261128000002Lz4Compression } from './Migration20261128000002Lz4Compression';
import { Migration20261128000003WebhookFeed } from './Migration20261128000003WebhookFeed';
import { Migration20261128000004KeyRotationIndex } from './Migration20261128000004KeyRotationIndex';
import { Migration20261128000005PolicyPatternInstructions } from './Migration20261128000005PolicyPatternInstructions';
import { Migration20261128000006KeyHeldByCreator } from './Migration20261128000006KeyHeldByCreator';

/** Every migration, in order. Listed explicitly so the same code runs under tsx, swc and tsc. */
export const MIGRATIONS: MigrationObject[] = [
  { name: 'Migration20261122000001Foundation', class: Migration20261122000001Foundation },
  { name: 'Migration20261122000002Idempotency', class: Migration20261122000002Idempotency },
  { name: 'Migration20261122000003Inventory', class: Migration20261122000003Inventory },
  { name: 'Migration20261122000004Invocations', class: Migration20261122000004Invocations },
  { name: 'Migration20261123000001ProviderAttempts', class: Migration20261123000001ProviderAttempts },
  { name: 'Migration20261124000001IdempotencyPrincipal', class: Migration20261124000001IdempotencyPrincipal },
  { name: 'Migration20261124000003CredentialAadVersion', class: Migration20261124000003CredentialAadVersion },
  { name: 'Migration20261125000001CheckpointResign', class: Migration20261125000001CheckpointResign },
  { name: 'Migration20261126000001Policies', class: Migration20261126000001Policies },
  { name: 'Migration20261126000002DecisionLog', class: Migration20261126000002DecisionLog },
  { name: 'Migration20261127000001Approvals', class: Migration20261127000001Approvals },
  { name: 'Migration20261127000002Webhooks', class: Migration20261127000002Webhooks },
  { name: 'Migration20261128000001PendingDeliveries', class: Migration20261128000001PendingDeliveries },
  { name: 'Migration20261128000002Lz4Compression', class: Migration20261128000002Lz4Compression },
  { name: 'Migration20261128000003WebhookFeed', class: Migration20261128000003WebhookFeed },
  { name: 'Migration20261128000004KeyRotationIndex', class: Migration20261128000004KeyRotationIndex },
  {
    name: 'Migration20261128000005PolicyPatternInstructions',
    class: Migration20261128000005PolicyPatternInstructions,
  },
  { name: 'Migration20261128000006KeyHeldByCreator', class: Migration20261128000006KeyHeldByCreator },
];
