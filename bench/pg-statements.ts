/**
 * BENCH_PG_STATEMENTS=1: where PostgreSQL's share of a call goes, statement by statement, from
 * the pg_stat_statements extension (executor time, rows and WAL of each statement of the bench's
 * database, counted over the measured row only).
 */
import { Client } from 'pg';
import * as invocationSql from '../infra/invocations/invocation-sql';
import type { Statement } from '../infra/db/prepared-pool';
import { MOVE_TO_ENTRIES } from '../infra/db/audit-rows';

export interface StatementRow {
  query: string;
  calls: number;
  execMs: number;
  rows: number;
  walBytes: number;
}

const HOW_TO_ENABLE = `BENCH_PG_STATEMENTS needs the pg_stat_statements extension loaded in PostgreSQL, and it is not.
Load it (as a superuser), restart the server, then run the bench again:
  psql -h 127.0.0.1 -U postgres -c "alter system set shared_preload_libraries = 'pg_stat_statements'"
  pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main restart
Undo it afterwards with "alter system reset shared_preload_libraries" and another restart.`;

/** This database's oid: pg_stat_statements keys its entries by it. */
const THIS_DATABASE = `(select oid from pg_database where datname = current_database())`;

/** pg_stat_statements, seen from one database and counting that database's statements only. */
export class StatementStats {
  private constructor(private readonly client: Client) {}

  /** Fails with how to load the extension when the server has not loaded it. */
  static async open(databaseUrl: string): Promise<StatementStats> {
    const client = new Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      await client.query('create extension if not exists pg_stat_statements');
      await client.query('select 1 from pg_stat_statements limit 1');
    } catch (err) {
      await client.end();
      throw new Error(`${HOW_TO_ENABLE}\n(PostgreSQL said: ${(err as Error).message})`);
    }
    return new StatementStats(client);
  }

  /** Forgets what this database ran so far (the other databases' entries stay). */
  async reset(): Promise<void> {
    await this.client.query(`select pg_stat_statements_reset(0, ${THIS_DATABASE}, 0)`);
  }

  async read(): Promise<StatementRow[]> {
    const { rows } = await this.client.query<{
      query: string;
      calls: string;
      exec_ms: number;
      rows: string;
      wal_bytes: string;
    }>(
      `select query, calls, total_exec_time as exec_ms, rows, wal_bytes
       from pg_stat_statements where dbid = ${THIS_DATABASE} and query not like '%pg_stat_statements%'`,
    );
    return rows.map((r) => ({
      query: r.query,
      calls: Number(r.calls),
      execMs: r.exec_ms,
      rows: Number(r.rows),
      walBytes: Number(r.wal_bytes),
    }));
  }

  close(): Promise<void> {
    return this.client.end();
  }
}

const collapse = (text: string) => text.replace(/\s+/g, ' ').trim();

/**
 * A statement's text with its constants and parameters as `?`: pg_stat_statements keeps the text
 * it first saw, often with the constants replaced by `$n` (`coalesce(x, 0)` becomes `coalesce(x, $3)`).
 */
const shape = (text: string) => collapse(text).replace(/'(?:[^']|'')*'|\$\d+|\b\d+(?:\.\d+)?\b/g, '?');

/** The invoke path's prepared statements and the seal's move, by their shape, so the report can name them. */
const KNOWN: ReadonlyMap<string, string> = new Map(
  [
    ...Object.values(invocationSql).filter(
      (s): s is Statement => typeof s === 'object' && s !== null && 'text' in s,
    ),
    { name: 'audit seal: move to entries', text: MOVE_TO_ENTRIES },
  ].map((s) => [shape(s.text), s.name]),
);

/** A statement's name when it is one of the invoke path's, else the start of its text. */
export const statementLabel = (query: string): string =>
  KNOWN.get(shape(query)) ?? collapse(query).slice(0, 60);

/**
 * The `top` statements by executor time, per completed call of the row (`calls`): how many
 * times each ran, its executor µs and WAL bytes; then the total over every statement.
 */
export function statementLines(rows: readonly StatementRow[], calls: number, top = 8): string[] {
  if (calls === 0) return ['PostgreSQL statements: no call completed'];
  const per = (v: number) => v / calls;
  const line = (label: string, runs: number, execMs: number, walBytes: number) =>
    `${label.padEnd(60)} ${per(runs).toFixed(2).padStart(6)} runs  ${per(execMs * 1000)
      .toFixed(1)
      .padStart(7)} µs  ${Math.round(per(walBytes)).toString().padStart(6)} B WAL`;
  const sorted = [...rows].sort((a, b) => b.execMs - a.execMs);
  const sum = (f: (r: StatementRow) => number) => rows.reduce((s, r) => s + f(r), 0);
  return [
    'PostgreSQL per call, by statement (executor time, pg_stat_statements):',
    ...sorted.slice(0, top).map((r) => line(statementLabel(r.query), r.calls, r.execMs, r.walBytes)),
    line(
      `all ${rows.length} statements`,
      sum((r) => r.calls),
      sum((r) => r.execMs),
      sum((r) => r.walBytes),
    ),
  ];
}
