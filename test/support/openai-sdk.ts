import OpenAI, { APIError } from 'openai';

/**
 * The official OpenAI SDK pointed at a test app's OpenAI-compatible surface, with the control
 * plane's headers (X-Session-Id, X-Invocation-Id, ...) and no retries of its own.
 */
export const openaiClient = (baseUrl: string, apiKey: string, headers: Record<string, string> = {}) =>
  new OpenAI({ apiKey, baseURL: `${baseUrl}/v1`, defaultHeaders: headers, maxRetries: 0 });

/** The error the official OpenAI SDK raised for a call that was meant to fail. */
export async function caught(promise: Promise<unknown>): Promise<APIError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof APIError) return err;
    throw err;
  }
  throw new Error('expected an APIError');
}
