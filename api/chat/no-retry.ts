/** Tells the OpenAI SDKs not to retry: they retry 409 and 5xx, and a retry is submitted anew. */
export const NO_RETRY = { 'x-should-retry': 'false' } as const;
