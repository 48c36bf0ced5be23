import type { paths } from './openapi';
import { dataOf, type RawClient } from './transport';

interface Page {
  data: unknown[];
  next_cursor: string | null;
}

type ListOperation<P extends keyof paths> = paths[P] extends {
  get: { responses: { 200: { content: { 'application/json': Page } } } };
}
  ? paths[P]['get']
  : never;

/** Every path whose GET answers a `{ data, next_cursor }` page. */
export type ListPath = {
  [P in keyof paths]: ListOperation<P> extends never ? never : P;
}[keyof paths];

type PageOf<P extends ListPath> = ListOperation<P>['responses'][200]['content']['application/json'];
export type ListItem<P extends ListPath> = PageOf<P>['data'][number];
export type ListQuery<P extends ListPath> = NonNullable<ListOperation<P>['parameters']['query']>;
export type ListPathParams<P extends ListPath> = ListOperation<P>['parameters']['path'];

/** openapi-fetch's GET, loosened: the generic walk over pages names the path only as a type. */
type LooseGet = (
  path: string,
  init: { params: { query?: Record<string, unknown>; path?: unknown } },
) => Promise<{ data?: Page; error?: unknown; response: Response }>;

/**
 * Every item of a list, page after page: each page's `next_cursor` asks for the next, until it is
 * null. Pages are fetched as the iteration reaches them, so breaking out early fetches no more.
 */
export async function* paginate<P extends ListPath>(
  raw: RawClient,
  path: P,
  query?: ListQuery<P>,
  pathParams?: ListPathParams<P>,
): AsyncGenerator<ListItem<P>, void, undefined> {
  const get = raw.GET as unknown as LooseGet;
  let cursor = (query as { cursor?: string } | undefined)?.cursor;
  do {
    const params = {
      query: { ...(query as Record<string, unknown> | undefined), cursor },
      ...(pathParams ? { path: pathParams } : {}),
    };
    const page = await dataOf(get(path, { params }));
    for (const item of page.data) yield item as ListItem<P>;
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
}

/** All items of an async iterable (a whole list: mind its size). */
export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}
