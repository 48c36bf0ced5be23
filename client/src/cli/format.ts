import Table from 'cli-table3';
import { printable } from './call';

type Cell = string | number | boolean | null | undefined;

/** No colours: the tables are read in terminals, logs and CI output alike. */
const plain = { style: { head: [], border: [], compact: true } };

/**
 * A cell's text, its control characters escaped before the table sees them: cli-table3 re-applies
 * any escape sequence it finds after a line break, which would show escapes the server never sent.
 */
const text = (cell: Cell) =>
  cell === null || cell === undefined || cell === '' ? '-' : printable(String(cell));

/** Rows under a header; an empty list says so instead of drawing an empty frame. */
export function table(head: string[], rows: Cell[][], empty = 'nothing to show'): string {
  if (rows.length === 0) return empty;
  const drawn = new Table({ head, ...plain });
  drawn.push(...rows.map((row) => row.map(text)));
  return drawn.toString();
}

/** One resource, a field per line. */
export function record(fields: [string, Cell][]): string {
  const drawn = new Table(plain);
  drawn.push(...fields.map(([name, value]) => ({ [name]: text(value) })));
  return drawn.toString();
}

/**
 * Dollars as the API keeps them (micro-dollars): cents always shown, and up to six decimals when
 * a cost is smaller than a cent, so a $0.000018 call does not read as $0.00.
 */
export function usd(amount: number | null | undefined): string {
  if (amount === null || amount === undefined) return '-';
  const fixed = amount.toFixed(6).replace(/0{1,4}$/, '');
  return `$${fixed}`;
}

/** A timestamp to the second: the API's milliseconds are noise in a table. */
export const when = (at: string | null | undefined) => (at ? at.replace(/\.\d+Z$/, 'Z') : null);

export const list = (items: readonly string[] | null | undefined) =>
  items && items.length ? items.join(', ') : null;

/** `used / limit`, or just what was used when there is no limit. */
export const ofLimit = (used: string | number, limit: string | number | null) =>
  limit === null ? `${used} (no cap)` : `${used} / ${limit}`;
