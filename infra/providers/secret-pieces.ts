/** Pieces this long of a secret are treated as the secret itself. */
export const PIECE = 8;
const REDACTED = '[redacted]';

const urlSafe = (b64: string) => b64.replace(/\+/g, '-').replace(/\//g, '_');

/** ASCII letters folded to lower case, nothing else: the length stays, so indexes still match. */
export const foldAscii = (text: string) => text.replace(/[A-Z]/g, (c) => c.toLowerCase());

/**
 * The ways a secret shows up in provider text: as is, URL-encoded, in hex, and in base64
 * (standard and url-safe). Inside a longer base64 blob (a Basic auth header) the secret may start
 * at any byte offset modulo 3, so each alignment is encoded, keeping only groups made of the
 * secret's bytes. Matching ignores the case of ASCII letters (an upper-cased key, upper-case hex).
 */
export function secretForms(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const forms = [secret, encodeURIComponent(secret), bytes.toString('hex')];
  for (let shift = 0; shift < 3; shift++) {
    const whole = Math.floor((bytes.length - shift) / 3) * 3;
    if (whole <= 0) continue;
    const b64 = bytes.subarray(shift, shift + whole).toString('base64');
    forms.push(b64, urlSafe(b64));
  }
  return forms;
}

/** Every PIECE-long window of every form: a set, so the scan of a message is linear. */
function piecesOf(secret: string): Set<string> {
  const pieces = new Set<string>();
  for (const form of secretForms(secret))
    for (let i = 0; i + PIECE <= form.length; i++) pieces.add(foldAscii(form.slice(i, i + PIECE)));
  return pieces;
}

/**
 * Replaces every run of text covered by a PIECE-long window of the secret (plain, URL-encoded,
 * hex or base64, in any case) with `[redacted]`, so no 8 consecutive characters of any of its
 * forms remain.
 */
export function redactSecretPieces(text: string, secret: string): string {
  const pieces = piecesOf(secret);
  if (pieces.size === 0) return text;
  const hidden = new Uint8Array(text.length);
  const folded = foldAscii(text);
  for (let i = 0; i + PIECE <= text.length; i++)
    if (pieces.has(folded.slice(i, i + PIECE))) hidden.fill(1, i, i + PIECE);
  let out = '';
  for (let i = 0; i < text.length;) {
    let end = i;
    while (end < text.length && hidden[end] === hidden[i]) end++;
    out += hidden[i] ? REDACTED : text.slice(i, end);
    i = end;
  }
  return out;
}
