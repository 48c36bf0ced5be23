import { invoke, waitForInvocation, type InvokeBody, type InvokeOptions, type WaitOptions } from './invoke';
import { paginate, type ListPath, type ListPathParams, type ListQuery } from './pagination';
import { resources } from './resources';
import { createRawClient, type ControlPlaneOptions } from './transport';

/** A client of the control plane's HTTP API. Every method throws ControlPlaneError on a non-2xx answer. */
export function createControlPlane(options: ControlPlaneOptions = {}) {
  const { raw, baseUrl } = createRawClient(options);
  return {
    baseUrl,
    /** The openapi-fetch client, typed with every path of the API, for what the methods do not cover. */
    raw,
    /** Every item of any `{ data, next_cursor }` list, page after page. */
    paginate: <P extends ListPath>(path: P, query?: ListQuery<P>, pathParams?: ListPathParams<P>) =>
      paginate(raw, path, query, pathParams),
    /** Runs a governed completion and waits for it to finish (see InvokeOptions). */
    invoke: (body: InvokeBody, invokeOptions?: InvokeOptions) => invoke(raw, baseUrl, body, invokeOptions),
    /** Waits for an invocation submitted earlier to finish. */
    waitForInvocation: (id: string, waitOptions?: WaitOptions) => waitForInvocation(raw, id, waitOptions),
    ...resources(raw),
  };
}

export type ControlPlane = ReturnType<typeof createControlPlane>;
