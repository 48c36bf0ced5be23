import { ProviderError, type CompletionRequest } from '../../domain/providers';
import type { HttpTransport } from '../../infra/providers/http-transport';
import { OpenAiChat } from '../../infra/providers/openai-chat';
import { errorFromStatus, networkError, scrubSecret } from '../../infra/providers/provider-errors';

const SECRET = 'sk-proj-Q7vLm2XeR9tB4kWn8ZpC3yHd6JsF';
// A key no regex knows the shape of (an openai_compatible server's own format).
const OTHER_SHAPE = 'gsk_T4pX9qLm2VbN7rWc5ZkH8sDf3GjY';

/** Every 8-character piece of `text`: none of them may survive the scrub. */
const windowsOf = (text: string): string[] =>
  Array.from({ length: Math.max(0, text.length - 7) }, (_, i) => text.slice(i, i + 8));

const expectNoPieceOf = (out: string, secretText: string) => {
  const found = windowsOf(secretText).filter((w) => out.includes(w));
  expect(found).toEqual([]);
};

/**
 * The characters of base64(prefix + secret) that depend on the secret's bytes alone: a provider
 * that echoes an encoded header (Basic auth, a token) shows exactly these.
 */
function encodedSecretPart(prefix: string, secret: string, urlSafe = false) {
  const p = Buffer.byteLength(prefix);
  const end = p + Buffer.byteLength(secret);
  const blob = Buffer.from(prefix + secret).toString(urlSafe ? 'base64url' : 'base64');
  return { blob, secretOnly: blob.slice(Math.ceil(p / 3) * 4, Math.floor(end / 3) * 4) };
}

describe('scrubSecret', () => {
  it.each([SECRET, OTHER_SHAPE])('removes a 14-character prefix echoed with the last four: %s', (secret) => {
    const text = `Incorrect API key provided: ${secret.slice(0, 14)}**********${secret.slice(-4)}.`;
    const out = scrubSecret(text, secret);
    expect(out).toContain('Incorrect API key provided');
    expect(out).not.toContain(secret.slice(0, 14));
    expectNoPieceOf(out, secret);
  });

  it('removes a suffix and a middle piece', () => {
    const out = scrubSecret(`key ends ...${SECRET.slice(-12)}; saw ${SECRET.slice(9, 25)} too`, SECRET);
    expectNoPieceOf(out, SECRET);
    expect(out).toMatch(/^key ends \.\.\..*; saw .* too$/);
  });

  it('removes any window of 8 characters, and leaves shorter pieces and plain text alone', () => {
    for (let i = 0; i + 8 <= SECRET.length; i++) {
      const out = scrubSecret(`token ${SECRET.slice(i, i + 8)} refused`, SECRET);
      expect(out).toBe('token [redacted] refused');
    }
    expect(scrubSecret(`near miss ${SECRET.slice(10, 17)}`, SECRET)).toBe(
      `near miss ${SECRET.slice(10, 17)}`,
    );
  });

  it.each([
    ['aligned', ''],
    ['shifted by one byte', 'u:'],
    ['shifted by two bytes', 'u:x'],
    ['Basic auth user:secret', 'user:'],
  ])('removes the secret in standard and url-safe base64, %s', (_label, prefix) => {
    for (const urlSafe of [false, true]) {
      const { blob, secretOnly } = encodedSecretPart(prefix, SECRET, urlSafe);
      expect(secretOnly.length).toBeGreaterThanOrEqual(40);
      const out = scrubSecret(`bad credentials in header: ${blob}`, SECRET);
      expect(out).toContain('bad credentials in header: ');
      expectNoPieceOf(out, secretOnly);
    }
  });

  it('removes a URL-encoded copy', () => {
    const secret = 'Zm9v+YmFy/YmF6=cXV4+cXV1eA/==';
    const encoded = encodeURIComponent(secret);
    expect(encoded).not.toBe(secret);
    const out = scrubSecret(`GET /v1?key=${encoded}&x=1 was refused`, secret);
    expectNoPieceOf(out, encoded);
    expectNoPieceOf(out, secret);
    expect(out).toMatch(/^GET \/v1\?key=.*&x=1 was refused$/);
  });

  it('removes a hex copy in either case, and a copy with its letters case-changed', () => {
    const hex = Buffer.from(OTHER_SHAPE, 'utf8').toString('hex');
    for (const form of [hex, hex.toUpperCase(), OTHER_SHAPE.toUpperCase(), OTHER_SHAPE.toLowerCase()]) {
      const out = scrubSecret(`dbg ${form} end`, OTHER_SHAPE);
      expect(out).toMatch(/^dbg .*end$/);
      expectNoPieceOf(out.toLowerCase(), form.toLowerCase());
    }
  });

  it('still removes an exact copy of a short secret', () => {
    expect(scrubSecret('key abc123 is wrong', 'abc123')).toBe('key [redacted] is wrong');
  });

  it('scrubs a huge message quickly and caps what it returns', () => {
    const text = `${'x'.repeat(4_000_000)} ${SECRET}`;
    const start = performance.now();
    const out = scrubSecret(`${SECRET.slice(3, 20)} ${text}`, SECRET);
    expect(performance.now() - start).toBeLessThan(200);
    expect(out.length).toBeLessThanOrEqual(501);
    expectNoPieceOf(out, SECRET);
  });
});

describe('provider errors that leave the worker', () => {
  it.each([401, 403])('keeps only the status and a fixed message on %i', (status) => {
    const err = errorFromStatus(status, `Incorrect API key provided: ${SECRET.slice(0, 6)}`, null);
    expect(err).toMatchObject({ kind: 'final', code: 'provider_auth_failed', status });
    expect(err.message).toBe(`provider answered ${status}: the credential was refused`);
  });

  it('scrubs transport failures too, not only error statuses', async () => {
    const transport = {
      postJson: () =>
        Promise.reject(
          networkError({ code: 'ECONNRESET', message: `socket hang up after ${SECRET.slice(2)}` }),
        ),
    } as unknown as HttpTransport;
    const req: CompletionRequest = {
      provider: 'openai',
      baseUrl: 'https://api.example.test/v1',
      secret: SECRET,
      model: 'gpt-x',
      messages: [{ role: 'user', content: 'hi' }],
      maxTokens: 5,
      timeoutMs: 1_000,
    };
    const err = await new OpenAiChat(transport, 'openai').complete(req).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderError);
    expect((err as ProviderError).message).toContain('socket hang up after');
    expectNoPieceOf((err as ProviderError).message, SECRET);
  });
});
