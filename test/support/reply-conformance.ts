import { isDeepStrictEqual } from 'node:util';
import type { Reply, RouteDef } from '../../api/http/route';

/** A JSON body, as opposed to a stream or text the route writes itself. */
const isJsonBody = (body: unknown): boolean =>
  Array.isArray(body) ||
  (typeof body === 'object' && body !== null && Object.getPrototypeOf(body) === Object.prototype);

/** Where two JSON values first differ, as a path (`data.0.output`). */
function firstDifference(sent: unknown, documented: unknown, path = ''): string {
  if (typeof sent !== 'object' || sent === null || typeof documented !== 'object' || documented === null)
    return path || '(the body)';
  const keys = new Set([...Object.keys(sent), ...Object.keys(documented)]);
  for (const key of keys) {
    const a = (sent as Record<string, unknown>)[key];
    const b = (documented as Record<string, unknown>)[key];
    if (!isDeepStrictEqual(a, b)) return firstDifference(a, b, path ? `${path}.${key}` : key);
  }
  return path || '(the body)';
}

/**
 * Holds a success reply to the schema its route documents in the OpenAPI description: the body as
 * the client receives it (through JSON) must parse, and parsing must drop nothing (a field the
 * schema does not name is one a strict client would refuse). Throws, so the request answers 500
 * and the test that made it fails, naming the route and the field.
 */
export function conformsToDocs(route: RouteDef, reply: Reply): void {
  const schema = route.responses[reply.status]?.schema;
  if (!schema || !isJsonBody(reply.body)) return;
  const sent: unknown = JSON.parse(JSON.stringify(reply.body));
  const parsed = schema.safeParse(sent);
  const problem = parsed.success
    ? isDeepStrictEqual(parsed.data, sent)
      ? null
      : `${firstDifference(sent, parsed.data)} is not in the schema`
    : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
  if (!problem) return;
  const message = `${route.method} ${route.path} answered ${reply.status} off its documented schema: ${problem}`;
  console.error(message);
  throw new Error(message);
}
