import { listAudit, verifyAudit } from '../../domain/audit/audit-log';
import { callOf } from '../http/call-context';
import { defineRoute, needs } from '../http/route';
import { presentAuditEntry, presentVerification } from '../presenters';
import { AuditEntry, AuditQuery, AuditVerification } from '../schemas/audit.schemas';
import { decodeCursor, encodeCursor, listOf } from '../schemas/common';

export const auditRoutes = [
  defineRoute({
    method: 'GET',
    path: '/v1/audit',
    summary: 'The org audit log, newest first; filters combine with AND, `until` is exclusive',
    tag: 'audit',
    access: needs('audit:read'),
    query: AuditQuery,
    responses: { 200: { description: 'a page of entries', schema: listOf(AuditEntry) } },
    handle: async (input) => {
      const { query } = input;
      const filter = {
        action: query.action,
        actorId: query.actor_id,
        resourceId: query.resource_id,
        since: query.since ? new Date(query.since) : undefined,
        until: query.until ? new Date(query.until) : undefined,
      };
      const before = decodeCursor(query.cursor, 'number');
      const page = await listAudit(
        input.infra.auditLog,
        callOf(input).principal.orgId,
        filter,
        query.limit,
        before,
      );
      return {
        status: 200,
        body: { data: page.items.map(presentAuditEntry), next_cursor: encodeCursor(page.nextBeforeSeq) },
      };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/audit/verify',
    summary: "Recompute the org's hash chain and report the first broken seq",
    tag: 'audit',
    access: needs('audit:read'),
    responses: { 200: { description: 'the verification', schema: AuditVerification } },
    handle: async (input) => {
      const { auditLog, checkpointKeys } = input.infra;
      const result = await verifyAudit(auditLog, callOf(input).principal.orgId, checkpointKeys);
      return { status: 200, body: presentVerification(result) };
    },
  }),
];
