import { randomBytes } from 'node:crypto';
import type { HttpClient, HttpResult } from './http-client';

/** JSON text that JSON.stringify cannot write: a number token such as 1e400, or nesting past the stack. */
export class RawJson {
  constructor(readonly text: string) {}
}

export const rawNumber = (token: string): RawJson => new RawJson(token);

/** `levels` arrays inside each other: `[[[...]]]`. */
export const deepArray = (levels: number): RawJson => new RawJson('['.repeat(levels) + ']'.repeat(levels));

/** `levels` objects inside each other: `{"a":{"a":...{}}}`. */
export const deepObject = (levels: number): RawJson =>
  new RawJson('{"a":'.repeat(levels - 1) + '{}' + '}'.repeat(levels - 1));

const MARK = `raw${randomBytes(6).toString('hex')}`;
const PLACEHOLDER = new RegExp(`"${MARK}:(\\d+)"`, 'g');

/** JSON.stringify, with each RawJson written as its text. */
export function toJsonText(value: unknown): string {
  const raws: string[] = [];
  const text = JSON.stringify(value, (_key, v: unknown) =>
    v instanceof RawJson ? `${MARK}:${raws.push(v.text) - 1}` : v,
  );
  return text.replace(PLACEHOLDER, (_match, i: string) => raws[Number(i)] ?? 'null');
}

export type ErrorReply = HttpResult<{
  error_code: string;
  message: string;
  request_id: string;
  details?: { path: string; message: string }[];
}>;

/** Sends a JSON body that may hold RawJson parts (or none, when body is undefined). */
export const callRaw = (
  http: HttpClient,
  method: string,
  path: string,
  body: unknown,
  token?: string,
): Promise<ErrorReply> =>
  http.call(method, path, {
    token,
    ...(body === undefined
      ? {}
      : { rawBody: toJsonText(body), headers: { 'content-type': 'application/json' } }),
  });

/** True when a detail names `field` itself or a place inside it (`metadata.k.0.…` is in `metadata.k`). */
export const namesField = (res: ErrorReply, field: string): boolean =>
  (res.body.details ?? []).some((d) => d.path === field || d.path.startsWith(`${field}.`));
