import { APIError } from 'openai';

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
