import type { InvocationError } from '../../domain/invocations/invocation';

/** An invocation's error as its JSON column holds it. */
export interface StoredError {
  error_code: string;
  message: string;
  details?: Record<string, unknown>;
}

export const storeError = (e: InvocationError): StoredError => ({
  error_code: e.errorCode,
  message: e.message,
  ...(e.details ? { details: e.details } : {}),
});

export const loadError = (e: StoredError): InvocationError => ({
  errorCode: e.error_code,
  message: e.message,
  ...(e.details ? { details: e.details } : {}),
});
