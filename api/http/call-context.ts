import type { CallContext } from '../../domain/principal';
import type { RouteInput } from './route';

/** The use-case context of an authenticated route (its pipeline guarantees a principal). */
export function callOf(input: RouteInput<unknown, unknown>): CallContext {
  if (!input.principal) throw new Error('callOf used on a public route');
  return { principal: input.principal, requestId: input.requestId };
}
