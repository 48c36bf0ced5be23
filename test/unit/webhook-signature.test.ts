import { createHmac } from 'node:crypto';
import { newWebhookSecret, signatureHeaders, signingKey, signPayload } from '../../domain/webhooks/sign';

/**
 * The example of the Standard Webhooks specification (and Svix's libraries), checked here
 * independently with `openssl dgst -sha256 -mac HMAC` over the same bytes.
 */
const SPEC = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

/** What a receiver computes, written out with node:crypto and nothing of the module under test. */
const receiverSignature = (secret: string, id: string, timestamp: string, body: string) =>
  `v1,${createHmac('sha256', Buffer.from(secret.replace(/^whsec_/, ''), 'base64'))
    .update(`${id}.${timestamp}.${body}`)
    .digest('base64')}`;

describe('webhook signing (Standard Webhooks)', () => {
  it('matches the specification example', () => {
    expect(signPayload(SPEC.secret, SPEC.id, SPEC.timestamp, SPEC.body)).toBe(SPEC.signature);
  });

  it('signs "<webhook-id>.<webhook-timestamp>.<body>" with the base64-decoded secret', () => {
    const secret = newWebhookSecret();
    const body = JSON.stringify({ type: 'approval.requested', id: 'msg_1', data: { note: 'héllo ✓' } });
    const at = new Date('2026-11-27T10:00:00.999Z');
    const headers = signatureHeaders(secret, 'msg_1', at, body);
    expect(headers['webhook-id']).toBe('msg_1');
    expect(headers['webhook-timestamp']).toBe('1795773600');
    expect(headers['webhook-signature']).toBe(receiverSignature(secret, 'msg_1', '1795773600', body));
  });

  it('changes when any of id, timestamp or body changes', () => {
    const secret = newWebhookSecret();
    const base = signPayload(secret, 'msg_1', 1, '{}');
    expect(signPayload(secret, 'msg_2', 1, '{}')).not.toBe(base);
    expect(signPayload(secret, 'msg_1', 2, '{}')).not.toBe(base);
    expect(signPayload(secret, 'msg_1', 1, '{ }')).not.toBe(base);
    expect(signPayload(newWebhookSecret(), 'msg_1', 1, '{}')).not.toBe(base);
  });

  it('makes secrets of "whsec_" and the base64 of 32 random bytes', () => {
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(signingKey(secret)).toHaveLength(32);
    expect(newWebhookSecret()).not.toBe(secret);
  });

  it('refuses a secret without the whsec_ prefix', () => {
    expect(() => signingKey('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).toThrow('not a webhook secret');
  });
});
