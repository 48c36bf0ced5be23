import { requireApproval } from './approval-fixtures';
import { setUpInvoking, type InvokeSetup } from './invoke-fixtures';
import { startTestApp, type TestApp } from './test-app';

/**
 * An app without workers, over an org whose model `gated` needs a person's approval. `pause` runs
 * while a second replica with the workers is up (so the guardian pauses what it submits); that
 * replica is stopped after it, so nothing but the test moves the approvals from then on.
 */
export async function appWithPausedApprovals(
  pause: (api: TestApp, setup: InvokeSetup) => Promise<void>,
): Promise<{ api: TestApp; setup: InvokeSetup }> {
  const api = await startTestApp();
  const withWorkers = await startTestApp({ workers: true, database: api.db, redisPrefix: api.prefix });
  try {
    const setup = await setUpInvoking(api.http, { models: ['gated'] });
    await requireApproval(api.http, setup.org.adminKey, { model: 'gated' });
    await pause(api, setup);
    return { api, setup };
  } finally {
    await withWorkers.close();
  }
}
