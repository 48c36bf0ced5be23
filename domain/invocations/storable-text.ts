/** NUL, and a UTF-16 surrogate without its pair: PostgreSQL's text and jsonb cannot hold either. */
// eslint-disable-next-line no-control-regex -- matching NUL is the point
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * Provider text as PostgreSQL can store it: each NUL and each lone surrogate becomes U+FFFD (the
 * replacement character), everything else is kept. A model can be asked to print such characters;
 * its answer must still be recorded and charged, never make the write fail.
 */
export const storableText = (text: string): string => text.replace(UNSTORABLE, '\ufffd');
