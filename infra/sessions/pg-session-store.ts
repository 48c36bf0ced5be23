import type { Knex } from '@mikro-orm/knex';
import type { AuditEvent } from '../../domain/audit/audit-event';
import type { Page, PageRequest } from '../../domain/model';
import type { Session } from '../../domain/sessions/session';
import type { SessionFilter, SessionStore } from '../../domain/sessions/session-store';
import { auditJson, auditRecordset, INSERT_AUDIT } from '../db/audit-rows';
import { toSession, type SessionRow } from './session-rows';

const INSERT_SESSION = `
  with s as (
    insert into sessions (id, org_id, agent_id, status, max_cost_micros, max_calls, max_tokens, metadata,
      created_by, created_at, expires_at)
    values (?, ?, ?, 'open', ?, ?, ?, ?::jsonb, ?, ?, ?)
    returning 1
  )
  ${INSERT_AUDIT} select * from ${auditRecordset('?')}`;

/** Sessions in PostgreSQL, each change with its audit event in the same transaction. */
export class PgSessionStore implements SessionStore {
  constructor(private readonly knex: Knex) {}

  async add(session: Session, event: AuditEvent): Promise<void> {
    await this.knex.raw(INSERT_SESSION, [
      session.id,
      session.orgId,
      session.agentId,
      session.limits.maxCostMicros,
      session.limits.maxCalls,
      session.limits.maxTokens,
      JSON.stringify(session.metadata),
      session.createdBy,
      session.createdAt,
      session.expiresAt,
      auditJson([event]),
    ]);
  }

  async get(orgId: string, id: string): Promise<Session | null> {
    const row: SessionRow | undefined = await this.knex('sessions').where({ org_id: orgId, id }).first();
    return row ? toSession(row) : null;
  }

  async list(orgId: string, filter: SessionFilter, page: PageRequest, now: Date): Promise<Page<Session>> {
    const query = this.knex<SessionRow>('sessions').where({ org_id: orgId });
    if (filter.agentId) query.andWhere({ agent_id: filter.agentId });
    // Expiry is a matter of time, whether or not the sweeper has recorded it yet.
    if (filter.status === 'open') query.andWhere({ status: 'open' }).andWhere('expires_at', '>', now);
    if (filter.status === 'closed') query.andWhere({ status: 'closed' });
    if (filter.status === 'expired')
      query.andWhere((q) =>
        q
          .where({ status: 'expired' })
          .orWhere((o) => o.where({ status: 'open' }).andWhere('expires_at', '<=', now)),
      );
    if (page.after) query.andWhere('id', '<', page.after);
    const rows: SessionRow[] = await query.orderBy('id', 'desc').limit(page.limit + 1);
    const items = rows.slice(0, page.limit).map(toSession);
    return { items, nextAfter: rows.length > page.limit ? (items.at(-1)?.id ?? null) : null };
  }

  close(
    orgId: string,
    id: string,
    at: Date,
    event: (session: Session) => AuditEvent,
  ): Promise<Session | null> {
    return this.knex.transaction(async (trx) => {
      const rows: SessionRow[] = await trx('sessions')
        .where({ org_id: orgId, id, status: 'open' })
        .andWhere('expires_at', '>', at)
        .update({ status: 'closed', closed_at: at })
        .returning('*');
      const row = rows[0];
      if (!row) return null;
      const session = toSession(row);
      await trx.raw(`${INSERT_AUDIT} select * from ${auditRecordset('?')}`, [auditJson([event(session)])]);
      return session;
    });
  }

  expireDue(now: Date, limit: number, event: (session: Session) => AuditEvent): Promise<number> {
    return this.knex.transaction(async (trx) => {
      const { rows } = (await trx.raw(
        `update sessions s set status = 'expired'
         from (select id from sessions where status = 'open' and expires_at <= ?
               order by expires_at limit ? for update skip locked) due
         where s.id = due.id
         returning s.*`,
        [now, limit],
      )) as { rows: SessionRow[] };
      if (rows.length === 0) return 0;
      await trx.raw(`${INSERT_AUDIT} select * from ${auditRecordset('?')}`, [
        auditJson(rows.map((r) => event(toSession(r)))),
      ]);
      return rows.length;
    });
  }
}
