import { resealLegacyCredentials, type ResealDeps } from '../../domain/credentials/reseal';
import type { Logger } from '../logger';

/**
 * Before any worker opens a credential: reseals rows sealed before provider and base_url were
 * bound (a migration cannot, it lacks the master key). Rows that do not open stay refused.
 */
export async function resealLegacyAtStart(deps: ResealDeps, logger: Logger): Promise<void> {
  const { resealed, unreadable } = await resealLegacyCredentials(deps);
  if (resealed > 0)
    logger.info({ resealed }, `resealed ${resealed} credentials with their provider and base_url bound`);
  if (unreadable.length > 0)
    logger.warn(
      { credential_refs: unreadable },
      'credentials sealed before provider and base_url were bound do not open and stay refused: ' +
        'put their master key in CP_MASTER_KEY_PREVIOUS and run `npm run master-key:reseal`, or rotate them',
    );
}
