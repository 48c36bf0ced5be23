import { defineRoute, PUBLIC, type RouteDef } from '../http/route';
import { buildOpenApi } from '../openapi';
import { acsRoutes } from './acs.routes';
import { agentRoutes } from './agents.routes';
import { approvalRoutes } from './approvals.routes';
import { auditRoutes } from './audit.routes';
import { chatRoutes } from './chat.routes';
import { credentialRoutes } from './credentials.routes';
import { decisionRoutes } from './decisions.routes';
import { identityRoutes } from './identity.routes';
import { keyRoutes } from './keys.routes';
import { pricingRoutes } from './pricing.routes';
import { policyRoutes } from './policies.routes';
import { invocationRoutes } from './invocations.routes';
import { publicRoutes } from './public.routes';
import { sessionRoutes } from './sessions.routes';
import { statsRoutes } from './stats.routes';
import { webhookRoutes } from './webhooks.routes';

const resourceRoutes: RouteDef[] = [
  ...publicRoutes,
  ...identityRoutes,
  ...keyRoutes,
  ...credentialRoutes,
  ...agentRoutes,
  ...policyRoutes,
  ...approvalRoutes,
  ...pricingRoutes,
  ...sessionRoutes,
  ...invocationRoutes,
  ...chatRoutes,
  ...statsRoutes,
  ...auditRoutes,
  ...acsRoutes,
  ...decisionRoutes,
  ...webhookRoutes,
];

const openApiRoute = defineRoute({
  method: 'GET',
  path: '/v1/openapi.json',
  summary: 'This OpenAPI 3.1 description',
  tag: 'config',
  access: PUBLIC,
  responses: { 200: { description: 'the OpenAPI document' } },
  handle: async () => ({ status: 200, body: openApiDocument }),
});

/** Every route of the API: the one place each declares its path, scope, schemas and handler. */
export const ROUTES: RouteDef[] = [...resourceRoutes, openApiRoute];

const openApiDocument = buildOpenApi(ROUTES);
