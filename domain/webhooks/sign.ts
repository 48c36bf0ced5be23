import { createHmac, randomBytes } from 'node:crypto';

/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): the secret is "whsec_" and the
 * base64 of the key; a signature is "v1," and the base64 HMAC-SHA256 of "<id>.<timestamp>.<body>".
 */
const SECRET_PREFIX = 'whsec_';

/** 32 random bytes, shown to the org once at creation. */
export const newWebhookSecret = (): string => `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;

/** The HMAC key inside a secret: the bytes its base64 part stands for. */
export function signingKey(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error('not a webhook secret');
  return Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
}

export function signPayload(
  secret: string,
  messageId: string,
  timestampSeconds: number,
  body: string,
): string {
  const mac = createHmac('sha256', signingKey(secret))
    .update(`${messageId}.${timestampSeconds}.${body}`)
    .digest('base64');
  return `v1,${mac}`;
}

/** The three headers a receiver verifies: which message, when it was signed, and the signature. */
export function signatureHeaders(
  secret: string,
  messageId: string,
  at: Date,
  body: string,
): Record<string, string> {
  const timestamp = Math.floor(at.getTime() / 1000);
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signPayload(secret, messageId, timestamp, body),
  };
}
