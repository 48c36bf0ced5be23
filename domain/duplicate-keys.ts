const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;

/** Where the string opened at `open` in valid JSON closes: the next quote not escaped. */
function closingQuote(text: string, open: number): number {
  for (let at = text.indexOf('"', open + 1); at !== -1; at = text.indexOf('"', at + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
  return text.length;
}

/** The next character past JSON whitespace from `at`. */
function nextCode(text: string, at: number): number {
  let code = text.charCodeAt(at);
  while (code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09) code = text.charCodeAt(++at);
  return code;
}

/** A key the API refuses: named twice in one object, or `__proto__`. */
export interface RefusedKey {
  key: string;
  reason: 'repeated' | 'reserved';
}

/**
 * A key the body may not hold, or null: the first key that one object of `text` (JSON that
 * JSON.parse took) names twice, else a key `__proto__` anywhere.
 * - Named twice: JSON.parse keeps the last of them silently, while a proxy, a log or a reviewer
 *   reading the request may take the first: `{"scopes":["read"],"scopes":["org:admin"]}` would
 *   mint an admin key that reads as a read-only one.
 * - `__proto__`: copying the parsed body into objects (validation does) sets their prototype
 *   instead of keeping it, so the key would vanish from what is stored and sent (QA: a tool
 *   schema's `__proto__` reached the provider as `{}`).
 * Keys are compared as decoded (`"a"` and `"\u0061"` are one). Strings are skipped with indexOf,
 * so a large prompt costs about what copying it would.
 */
export function refusedKey(text: string): RefusedKey | null {
  let repeated: string | null = null;
  let reserved = false;
  scanKeys(text, (key, again) => {
    if (again) repeated = key;
    else if (key === '__proto__') reserved = true;
    return again;
  });
  if (repeated !== null) return { key: repeated, reason: 'repeated' };
  return reserved ? { key: '__proto__', reason: 'reserved' } : null;
}

/** How many keys of `text` (JSON that JSON.parse took) repeat one named before them in their object. */
export function repeatedKeyCount(text: string): number {
  let count = 0;
  scanKeys(text, (_key, again) => {
    if (again) count++;
    return false;
  });
  return count;
}

/**
 * Calls `visit` with each key of each object in `text` (decoded) and whether its object named it
 * before; stops when `visit` returns true.
 */
function scanKeys(text: string, visit: (key: string, again: boolean) => boolean): void {
  /** Per open container, innermost last: the keys an object has named so far; null for an array. */
  const open: Array<Set<string> | null> = [];
  for (let at = 0; at < text.length; at++) {
    const code = text.charCodeAt(at);
    if (code === QUOTE) {
      const close = closingQuote(text, at);
      const keys = open[open.length - 1];
      if (keys && nextCode(text, close + 1) === COLON) {
        const raw = text.slice(at, close + 1);
        const key = raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1);
        if (visit(key, keys.has(key))) return;
        keys.add(key);
      }
      at = close;
    } else if (code === 0x7b) open.push(new Set());
    else if (code === 0x5b) open.push(null);
    else if (code === 0x7d || code === 0x5d) open.pop();
  }
}
