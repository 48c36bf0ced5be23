import { KEY_LIFETIME_DAYS } from '../../domain/keys/build-key';
import { PROVIDERS } from '../../domain/providers';
import { PRESETS, SCOPES } from '../../domain/scopes';
import { orgRateLimitOf } from '../../infra/config';
import { defineRoute, PUBLIC } from '../http/route';
import { Health, PublicConfig, Ready } from '../schemas/public.schemas';

const probe = (check: () => Promise<void>) =>
  check().then(
    () => 'ok' as const,
    () => 'error' as const,
  );

export const publicRoutes = [
  defineRoute({
    method: 'GET',
    path: '/health',
    summary: 'Liveness: answers while dependencies are down',
    tag: 'probes',
    access: PUBLIC,
    unlimited: true,
    responses: { 200: { description: 'alive', schema: Health } },
    handle: async () => ({ status: 200, body: { status: 'ok' } }),
  }),
  defineRoute({
    method: 'GET',
    path: '/ready',
    summary: 'Readiness: checks PostgreSQL and Redis',
    tag: 'probes',
    access: PUBLIC,
    unlimited: true,
    responses: {
      200: { description: 'ready', schema: Ready },
      503: { description: 'a check failed', schema: Ready },
    },
    handle: async ({ infra }) => {
      const [database, redis] = await Promise.all([probe(infra.checks.database), probe(infra.checks.redis)]);
      const ready = database === 'ok' && redis === 'ok';
      return {
        status: ready ? 200 : 503,
        body: { status: ready ? 'ready' : 'unavailable', checks: { database, redis } },
      };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/config/public',
    summary: 'Public configuration: scopes, presets, providers and limits',
    tag: 'config',
    access: PUBLIC,
    responses: { 200: { description: 'configuration', schema: PublicConfig } },
    handle: async ({ infra: { config } }) => ({
      status: 200,
      body: {
        api_version: 'v1',
        key_prefix: 'csk_',
        scopes: SCOPES,
        presets: PRESETS,
        providers: PROVIDERS,
        limits: {
          max_body_bytes: config.CP_MAX_BODY_BYTES,
          expires_in_days: KEY_LIFETIME_DAYS,
          rate_limit_per_minute: config.CP_RATE_LIMIT_PER_MINUTE,
          org_rate_limit_per_minute: orgRateLimitOf(config),
          public_rate_limit_per_minute: config.CP_PUBLIC_RATE_LIMIT_PER_MINUTE,
          max_wait_seconds: config.CP_MAX_WAIT_SECONDS,
          max_messages: config.CP_MAX_MESSAGES,
          max_session_cost_usd: config.CP_MAX_SESSION_COST_USD,
        },
      },
    }),
  }),
];
