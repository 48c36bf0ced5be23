import { listAudit } from '../../domain/audit/audit-log';
import type { Checkpoint } from '../../domain/audit/checkpoint';
import { signedAuditHead, verifyAudit } from '../../domain/audit/verify-audit';
import { notFound } from '../../domain/errors';
import { callOf } from '../http/call-context';
import { defineRoute, needs } from '../http/route';
import { presentAuditEntry, presentVerification } from '../presenters';
import { AuditEntry, AuditQuery, AuditSignedHead, AuditVerification } from '../schemas/audit.schemas';
import { decodeCursor, encodeCursor, listOf } from '../schemas/common';
import { InFlightGate } from '../http/in-flight-gate';

/** A verification reads the org's whole chain in one transaction: it holds a pooled connection. */
const verifications = new InFlightGate('audit verification', 1, 2);

const presentSignedHead = (h: Checkpoint) => ({
  org_id: h.orgId,
  seq: h.seq,
  hash: h.hash,
  key_id: h.keyId,
  signature: h.signature,
  signed_at: h.signedAt.toISOString(),
});

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
      const before = decodeCursor(query.cursor, 'number', 'audit');
      const page = await listAudit(
        input.infra.auditLog,
        callOf(input).principal.orgId,
        filter,
        query.limit,
        before,
      );
      return {
        status: 200,
        body: {
          data: page.items.map(presentAuditEntry),
          next_cursor: encodeCursor(page.nextBeforeSeq, 'audit'),
        },
      };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/audit/verify',
    summary:
      "Recompute the org's hash chain and report the first broken seq. One verification per org, and two in all, run at once per API process (each reads the whole chain in one transaction); one more is a 429 rate_limited with Retry-After: 1",
    tag: 'audit',
    access: needs('audit:read'),
    responses: { 200: { description: 'the verification', schema: AuditVerification } },
    handle: async (input) => {
      const { auditLog, checkpointKeys, logger } = input.infra;
      const orgId = callOf(input).principal.orgId;
      const result = await verifications.run(orgId, () => verifyAudit(auditLog, orgId, checkpointKeys));
      // The answer's shape is fixed by the contract; why it failed goes to the operators' log.
      if (!result.valid) {
        const { firstBrokenSeq, reason } = result;
        logger.warn(
          { org_id: orgId, first_broken_seq: firstBrokenSeq, reason, request_id: input.requestId },
          'audit chain failed verification',
        );
      }
      return { status: 200, body: presentVerification(result) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/audit/head',
    summary:
      "The org's newest signed chain head: export it off the box; later the chain must still carry `hash` at `seq`",
    tag: 'audit',
    access: needs('audit:read'),
    responses: {
      200: { description: 'the signed head', schema: AuditSignedHead },
      404: { description: 'nothing sealed yet' },
    },
    handle: async (input) => {
      const head = await signedAuditHead(input.infra.auditLog, callOf(input).principal.orgId);
      if (!head) throw notFound('signed audit head');
      return { status: 200, body: presentSignedHead(head) };
    },
  }),
];
