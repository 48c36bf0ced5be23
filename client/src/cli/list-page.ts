import { Option, type Command } from 'commander';
import type { ControlPlane } from '../control-plane';
import { collect, type ListItem, type ListPath, type ListQuery } from '../pagination';
import { dataOf } from '../transport';
import type { Call } from './call';
import { pageSize } from './parsers';

export interface PageOptions {
  limit?: number;
  cursor?: string;
  all?: boolean;
}

export interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

/** The flags of every list command: one page as the API serves it, or every page (`--all`). */
export const pageFlags = (command: Command) =>
  command
    .addOption(
      new Option('--limit <n>', 'items per page (1..100; the API defaults to 20)').argParser(pageSize),
    )
    .option('--cursor <cursor>', 'the page after this one (next_cursor of the previous page)')
    .addOption(new Option('--all', 'every page, one after another').conflicts('cursor'));

type LooseGet = (
  path: string,
  init: { params: { query: Record<string, unknown> } },
) => Promise<{
  data?: unknown;
  error?: unknown;
  response: Response;
}>;

/**
 * One page of a list, exactly as the API answered it (so `--json` prints the API's own JSON), or
 * with `--all` every item in one `{ data, next_cursor: null }`.
 */
export async function fetchPage<P extends ListPath>(
  cp: ControlPlane,
  path: P,
  filters: ListQuery<P>,
  options: PageOptions,
): Promise<Page<ListItem<P>>> {
  const query = { ...filters, limit: options.limit, cursor: options.cursor } as ListQuery<P>;
  if (options.all) return { data: await collect(cp.paginate(path, query)), next_cursor: null };
  // The typed GET cannot be called with a path known only as a type parameter.
  const get = cp.raw.GET as unknown as LooseGet;
  return (await dataOf(get(path, { params: { query: query as Record<string, unknown> } }))) as Page<
    ListItem<P>
  >;
}

/** A page's table, and where the next page starts when there is one. */
export function showPage<T>(call: Call<PageOptions>, page: Page<T>, render: (items: T[]) => string): number {
  const code = call.show(page, () => render(page.data));
  if (!call.json && page.next_cursor) call.err(`more: --cursor ${page.next_cursor} (or --all)`);
  return code;
}
