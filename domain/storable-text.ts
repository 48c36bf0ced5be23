/** Half of a UTF-16 surrogate pair without the other half: PostgreSQL's text and jsonb refuse it, as NUL. */
export const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

const UNSTORABLE = new RegExp(`\\u0000|${LONE_SURROGATE.source}`, 'g');

/**
 * Provider text as PostgreSQL can store it: each NUL and each lone surrogate becomes U+FFFD (the
 * replacement character), everything else is kept. A model can be asked to print such characters;
 * its answer must still be recorded and charged, never make the write fail. (Input a client sends
 * with them is refused instead: api/http/unstorable-input.ts.)
 */
export const storableText = (text: string): string => text.replace(UNSTORABLE, '\ufffd');
