import { getInvocation } from './invoke';
import { paginate, type ListQuery } from './pagination';
import { dataOf, type RawClient } from './transport';
import type { BodyOf, QueryOf } from './types';

/** The API's resources, one object each; lists are AsyncIterables that walk every page. */
export function resources(raw: RawClient) {
  const id = (value: string) => ({ path: { id: value } });
  return {
    keys: {
      create: (body: BodyOf<'/v1/keys', 'post'>) => dataOf(raw.POST('/v1/keys', { body })),
      list: (query?: ListQuery<'/v1/keys'>) => paginate(raw, '/v1/keys', query),
      get: (keyId: string) => dataOf(raw.GET('/v1/keys/{id}', { params: id(keyId) })),
      rotate: (keyId: string, body: BodyOf<'/v1/keys/{id}/rotate', 'post'> = {}) =>
        dataOf(raw.POST('/v1/keys/{id}/rotate', { params: id(keyId), body })),
      revoke: (keyId: string) => dataOf(raw.DELETE('/v1/keys/{id}', { params: id(keyId) })),
    },
    credentials: {
      add: (body: BodyOf<'/v1/credentials', 'post'>) => dataOf(raw.POST('/v1/credentials', { body })),
      list: (query?: ListQuery<'/v1/credentials'>) => paginate(raw, '/v1/credentials', query),
      get: (ref: string) => dataOf(raw.GET('/v1/credentials/{ref}', { params: { path: { ref } } })),
      delete: (ref: string) => dataOf(raw.DELETE('/v1/credentials/{ref}', { params: { path: { ref } } })),
    },
    agents: {
      create: (body: BodyOf<'/v1/agents', 'post'>) => dataOf(raw.POST('/v1/agents', { body })),
      get: (agentId: string) => dataOf(raw.GET('/v1/agents/{id}', { params: id(agentId) })),
      list: (query?: ListQuery<'/v1/agents'>) => paginate(raw, '/v1/agents', query),
      agbom: (agentId: string) => dataOf(raw.GET('/v1/agents/{id}/agbom', { params: id(agentId) })),
    },
    sessions: {
      open: (body: BodyOf<'/v1/sessions', 'post'>) => dataOf(raw.POST('/v1/sessions', { body })),
      get: (sessionId: string) => dataOf(raw.GET('/v1/sessions/{id}', { params: id(sessionId) })),
      close: (sessionId: string) => dataOf(raw.POST('/v1/sessions/{id}/close', { params: id(sessionId) })),
      list: (query?: ListQuery<'/v1/sessions'>) => paginate(raw, '/v1/sessions', query),
    },
    invocations: {
      get: (invocationId: string, options: { waitSeconds?: number; signal?: AbortSignal } = {}) =>
        getInvocation(raw, invocationId, options.waitSeconds, options.signal),
      list: (query?: ListQuery<'/v1/llm/invocations'>) => paginate(raw, '/v1/llm/invocations', query),
      cancel: (invocationId: string) =>
        dataOf(raw.POST('/v1/llm/invocations/{id}/cancel', { params: id(invocationId) })),
    },
    approvals: {
      list: (query?: ListQuery<'/v1/approvals'>) => paginate(raw, '/v1/approvals', query),
      get: (approvalId: string) => dataOf(raw.GET('/v1/approvals/{id}', { params: id(approvalId) })),
      approve: (approvalId: string, body: BodyOf<'/v1/approvals/{id}/approve', 'post'> = {}) =>
        dataOf(raw.POST('/v1/approvals/{id}/approve', { params: id(approvalId), body })),
      reject: (approvalId: string, body: BodyOf<'/v1/approvals/{id}/reject', 'post'> = {}) =>
        dataOf(raw.POST('/v1/approvals/{id}/reject', { params: id(approvalId), body })),
    },
    audit: {
      list: (query?: ListQuery<'/v1/audit'>) => paginate(raw, '/v1/audit', query),
      verify: () => dataOf(raw.GET('/v1/audit/verify')),
      head: () => dataOf(raw.GET('/v1/audit/head')),
    },
    stats: {
      usage: (query: QueryOf<'/v1/stats/usage', 'get'> = {}) =>
        dataOf(raw.GET('/v1/stats/usage', { params: { query } })),
    },
    pricing: {
      list: () => dataOf(raw.GET('/v1/pricing')),
      set: (model: string, body: BodyOf<'/v1/pricing/{model}', 'put'>) =>
        dataOf(raw.PUT('/v1/pricing/{model}', { params: { path: { model } }, body })),
    },
  };
}
