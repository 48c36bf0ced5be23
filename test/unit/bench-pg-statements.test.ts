import { statementLabel, statementLines, type StatementRow } from '../../bench/pg-statements';
import { FINISH } from '../../infra/invocations/invocation-sql';

const row = (query: string, calls: number, execMs: number, walBytes: number): StatementRow => ({
  query,
  calls,
  execMs,
  rows: calls,
  walBytes,
});

describe('the bench report of PostgreSQL statements', () => {
  it("names the invoke path's prepared statements by their name, whatever the whitespace", () => {
    expect(statementLabel(FINISH.text)).toBe('cp_finish');
    expect(statementLabel(`\n  ${FINISH.text.replace(/\n\s*/g, ' ')}  `)).toBe('cp_finish');
  });

  it('still names them when pg_stat_statements kept their constants as parameters', () => {
    const kept = FINISH.text.replace('coalesce(i.input_tokens, 0)', 'coalesce(i.input_tokens, $3)');
    expect(kept).not.toBe(FINISH.text);
    expect(statementLabel(kept.replace("'{}'", '$9'))).toBe('cp_finish');
  });

  it('shows the start of any other statement, with its whitespace collapsed', () => {
    const seal =
      'delete from audit_outbox\n   where pos in (select pos from audit_outbox where org_id = $1 order by pos limit $2)';
    expect(statementLabel(seal)).toBe('delete from audit_outbox where pos in (select pos from audit');
  });

  it('lists the statements by executor time per completed call, then the total of all', () => {
    const lines = statementLines(
      [row('select 1', 100, 2, 0), row(FINISH.text, 20, 10, 400_000), row('select 2', 200, 4, 1_000)],
      200,
    );
    expect(lines[0]).toMatch(/^PostgreSQL per call, by statement/);
    // 10 ms over 200 calls = 50 µs a call; 20 runs = 0.10 a call; 400 kB of WAL = 2000 B a call
    expect(lines[1]).toMatch(/^cp_finish\s+0\.10 runs\s+50\.0 µs\s+2000 B WAL$/);
    expect(lines[2]).toMatch(/^select 2\s+1\.00 runs\s+20\.0 µs\s+5 B WAL$/);
    expect(lines[3]).toMatch(/^select 1\s+0\.50 runs\s+10\.0 µs\s+0 B WAL$/);
    expect(lines[4]).toMatch(/^all 3 statements\s+1\.60 runs\s+80\.0 µs\s+2005 B WAL$/);
  });

  it('keeps the top few and still totals every statement', () => {
    const rows = Array.from({ length: 12 }, (_, i) => row(`select ${i}`, 10, i + 1, 0));
    const lines = statementLines(rows, 10, 3);
    expect(lines.slice(1, 4).map((l) => l.split(/\s{2,}/)[0])).toEqual([
      'select 11',
      'select 10',
      'select 9',
    ]);
    expect(lines[4]).toMatch(/^all 12 statements\s+12\.00 runs\s+7800\.0 µs/);
  });

  it('says so when no call completed, rather than dividing by zero', () => {
    expect(statementLines([row('select 1', 5, 1, 0)], 0)).toEqual([
      'PostgreSQL statements: no call completed',
    ]);
  });
});
