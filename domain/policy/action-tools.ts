import type { ChatMessage } from '../providers';
import { repeatedKeyCount } from '../duplicate-keys';
import { foldText, otherForms } from './fold-text';
import type { Action } from './policy';

interface Derived {
  tools: string[];
  /** Each of `tools` as rules compare it (toolKey). */
  toolKeys: string[];
  /** The texts as sent, then the other forms of each (`otherForms`: plain, folded) that differ. */
  texts: string[];
  /** What a scan of every text reads, other forms included, each text weighing TEXT_WEIGHT more. */
  textLength: number;
  /** What the other forms alone add to it. */
  formsLength: number;
}

/**
 * What each text weighs besides its characters, in characters: a pattern's run on a text costs
 * something however short the text (about 0.2 µs on the 2-core VM, against 0.4 µs a character
 * for a plain pattern), so 340,000 empty strings in a tool's schema are not taken for no work
 * (QA: they held the event loop 1.4 s, their evaluation counted as light).
 */
export const TEXT_WEIGHT = 1;

/**
 * Worked out once per action object: the engine asks for them for every policy and rule, and
 * each walks the whole conversation. Actions are never changed in place (a modification makes a
 * new one), so an entry cannot go stale.
 */
const memo = new WeakMap<Action, Derived>();

function derived(action: Action): Derived {
  let found = memo.get(action);
  if (!found) {
    const sent = texts(action);
    const forms: string[] = [];
    for (const text of sent) forms.push(...otherForms(text));
    const formsLength = lengthOf(forms);
    const all = forms.length > 0 ? sent.concat(forms) : sent;
    const tools = toolNames(action);
    found = {
      tools,
      toolKeys: tools.map(toolKey),
      texts: all,
      textLength: lengthOf(sent) + formsLength,
      formsLength,
    };
    memo.set(action, found);
  }
  return found;
}

function toolNames(action: Action): string[] {
  const names = new Set<string>(offeredToolNames(action.offeredTools));
  const chosen = chosenToolName(action.toolChoice);
  if (chosen !== undefined) names.add(chosen);
  if (action.tool) names.add(action.tool.name);
  for (const m of action.messages ?? []) for (const call of m.toolCalls ?? []) names.add(call.function.name);
  return [...names];
}

function texts(action: Action): string[] {
  const found: string[] = [];
  for (const m of action.messages ?? []) {
    found.push(m.content);
    if (m.toolCallId !== undefined) found.push(m.toolCallId);
    for (const c of m.toolCalls ?? []) {
      found.push(c.id, c.function.name);
      argumentTexts(c.function.arguments, found);
    }
  }
  if (action.tool) stringsIn(action.tool.arguments, { into: found });
  // The offered tools and the choice among them, keys and numbers too: the model reads all of it.
  const definition = { into: found, keys: true, numbers: true };
  if (action.offeredTools) stringsIn(action.offeredTools, definition);
  if (typeof action.toolChoice === 'object') stringsIn(action.toolChoice, definition);
  return found;
}

const lengthOf = (texts: string[]): number => texts.reduce((n, t) => n + t.length + TEXT_WEIGHT, 0);

/**
 * A tool call's arguments as sent (JSON text) and, when the text escapes characters, the strings
 * it holds (keys too) as decoded, added to `into`: `"pass\u200bword"` is ASCII as sent, and a
 * pattern must see what the model reads.
 */
function argumentTexts(text: string, into: string[]): void {
  into.push(text);
  if (!text.includes('\\')) return;
  try {
    stringsIn(JSON.parse(text) as unknown, { into, keys: true });
  } catch {
    // Not JSON (or no longer: an earlier redaction that spanned tokens): the decoded text below.
  }
  // And the whole text with its escapes decoded, for a pattern that spans a key and its value
  // (QA: `{"mot\u0020de passe":"hunter2"}` met neither form above).
  const decoded = decodedEscapes(text);
  if (decoded !== text) into.push(decoded);
}

interface Walk {
  /** Where the strings go (returned). */
  into: string[];
  /** Keys too (a tool call's escaped arguments, tool definitions). */
  keys?: boolean;
  /** Numbers too, as written by JSON (tool definitions). */
  numbers?: boolean;
}

/**
 * Every string in a JSON value, its keys and numbers too when asked: what the arguments of the
 * action's own tool call say (keys and numbers aside), what a tool call's escaped arguments hold,
 * or what the offered tools' definitions say. One array for all: a schema may hold many strings.
 */
function stringsIn(value: unknown, walk: Walk): string[] {
  if (typeof value === 'string') walk.into.push(value);
  else if (typeof value === 'number' && walk.numbers) walk.into.push(JSON.stringify(value));
  else if (Array.isArray(value)) for (const v of value) stringsIn(v, walk);
  else if (value !== null && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) {
      if (walk.keys) walk.into.push(k);
      stringsIn(v, walk);
    }
  return walk.into;
}

/**
 * The same JSON value with `change` applied to each of its strings (keys kept): the arguments of
 * the action's own tool call, whose shape survives.
 */
function mapStrings(value: unknown, change: (text: string) => string): unknown {
  if (typeof value === 'string') return change(value);
  if (Array.isArray(value)) return value.map((v) => mapStrings(v, change));
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mapStrings(v, change)]));
  return value;
}

/**
 * Tool definitions (or a tool_choice) with `change` applied to every string, key and number in
 * them: a number it changes becomes a string (as in a tool call's arguments), and a property
 * renamed in `properties` is renamed alike in `required`, the same text changing the same way.
 * Two keys of one object that a redaction would make one cannot both be sent: that is an error,
 * so the evaluation fails closed rather than drop one.
 */
function mapDefinition(value: unknown, change: (text: string) => string): unknown {
  if (typeof value === 'string') return change(value);
  if (typeof value === 'number') {
    const written = JSON.stringify(value);
    const after = change(written);
    return after === written ? value : after;
  }
  if (Array.isArray(value)) return value.map((v) => mapDefinition(v, change));
  if (value === null || typeof value !== 'object') return value;
  const mapped: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    const renamed = change(key);
    if (Object.hasOwn(mapped, renamed))
      throw new Error(
        `a redaction would make two keys of one tool definition the same (${JSON.stringify(renamed)})`,
      );
    mapped[renamed] = mapDefinition(v, change);
  }
  return mapped;
}

/**
 * The tools an action involves, for the rules that name tools (`deny_tools`, `applies_to.tools`,
 * `require_approval.when.tools`): the tool call it is about, the function tools it offers the
 * model (Chat Completions `tools`) and the tool calls already in its conversation. A tool the
 * model may call, or has called, is as much the agent's use of it as a call made directly.
 */
export const toolNamesOf = (action: Action): string[] => derived(action).tools;

/**
 * A tool name as rules compare it: folded (fullwidth letters, invisible characters) and in lower
 * case, so that `Danger`, `ｄａｎｇｅｒ` or `dan\u200bger` is the `danger` a rule names (QA: an
 * agent names its own tools; a person reading "danger" must not be approving something else).
 */
export const toolKey = (name: string): string => foldText(name).toLowerCase();

/** toolNamesOf's names as rules compare them, in the same order. */
export const toolKeysOf = (action: Action): string[] => derived(action).toolKeys;

/** The function a Chat Completions `tool_choice` forces (`{ type: "function", function: { name } }`), if any. */
const chosenToolName = (choice: unknown): string | undefined => {
  const name = (choice as { function?: { name?: unknown } } | null | undefined)?.function?.name;
  return typeof name === 'string' ? name : undefined;
};

/** The names of the function tools a Chat Completions request offers (validated at the API). */
export function offeredToolNames(tools: unknown[] | undefined): string[] {
  const names: string[] = [];
  for (const tool of tools ?? []) {
    const name = (tool as { function?: { name?: unknown } } | null)?.function?.name;
    if (typeof name === 'string') names.push(name);
  }
  return names;
}

/**
 * The text that patterns judge: every message's content, and the names, ids and arguments of
 * every tool call in the conversation (and each result's tool_call_id), which the model reads as
 * much as the content (and the strings in the arguments as decoded, when they hold escapes),
 * every string in the arguments of the tool call the action
 * itself is about (`tool`) and every string in the definitions of the tools it offers the model
 * (names, descriptions, parameter schemas with their keys and numbers: the model reads those too,
 * and they could carry what a pattern stops) and in its tool_choice; and the other forms of each
 * (`otherForms`: accents kept, then folded) where they differ from it. The keys of the action's
 * own tool call's arguments are not read: they are its shape.
 */
export const textsOf = (action: Action): string[] => derived(action).texts;

/** Whether any text of the action has another form (plain or folded) than its own. */
export const hasOtherForms = (action: Action): boolean => derived(action).formsLength > 0;

/** How many UTF-16 code units `textsOf` returns in all: what every pattern rule scans. */
export const textLengthOf = (action: Action): number => derived(action).textLength;

/**
 * What a redaction scans at worst: the match over every text, the replacement in each text as
 * sent, then a find and a replacement in each of its other forms that differ from it.
 */
export const redactionLengthOf = (action: Action): number => {
  const { textLength, formsLength } = derived(action);
  return 2 * textLength + formsLength;
};

/** The same action with `change` applied to each text `textsOf` returns (a redaction). */
export const mapActionTexts = (action: Action, change: (text: string) => string): Action => ({
  ...action,
  ...(action.messages ? { messages: mapTexts(action.messages, change) } : {}),
  ...(action.tool ? { tool: { ...action.tool, arguments: mapStrings(action.tool.arguments, change) } } : {}),
  ...(action.offeredTools ? { offeredTools: mapDefinition(action.offeredTools, change) as unknown[] } : {}),
  ...(typeof action.toolChoice === 'object' ? { toolChoice: mapDefinition(action.toolChoice, change) } : {}),
});

const mapTexts = (messages: ChatMessage[], change: (text: string) => string): ChatMessage[] =>
  messages.map((m) => ({
    ...m,
    content: change(m.content),
    // Ids change as their calls' do (the same text, the same change), so each result still names its call.
    ...(m.toolCallId !== undefined ? { toolCallId: change(m.toolCallId) } : {}),
    ...(m.toolCalls
      ? {
          toolCalls: m.toolCalls.map((c) => ({
            ...c,
            id: change(c.id),
            function: {
              ...c.function,
              name: change(c.function.name),
              arguments: changeArguments(c.function.arguments, change),
            },
          })),
        }
      : {}),
  }));

/** A JSON string literal, or a number outside one: the tokens a redaction may rewrite. */
const JSON_TOKEN = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;

/**
 * A tool call's arguments (JSON text) with `change` applied to each string (keys included) and
 * number in them, so that a redaction leaves valid JSON: a number it changes becomes a string,
 * and every other byte stays as sent (no number is re-serialised). When what the pattern matched
 * spans tokens (a key with its value), it is changed as text, which the JSON may not survive:
 * what a redaction matches never reaches the provider. That text has its JSON escapes decoded
 * first, so an escaped copy of the match (`mot\u0020de passe`) is not sent (QA). Text that is
 * not JSON is changed as text, decoded where a match shows only so (`changeDecoded`).
 */
function changeArguments(text: string, change: (text: string) => string): string {
  if (!isJson(text)) return changeDecoded(text, change);
  const rewritten = text.replace(JSON_TOKEN, (token) => {
    const value = token.startsWith('"') ? (JSON.parse(token) as string) : token;
    const after = change(value);
    return after === value ? token : JSON.stringify(after);
  });
  if (rewritten !== text) refuseMergedKeys(text, rewritten);
  const spanning = decodedEscapes(rewritten);
  if (change(spanning) === spanning) return rewritten;
  const changed = change(decodedEscapes(text));
  if (isJson(changed)) refuseMergedKeys(text, changed);
  return changed;
}

/**
 * Arguments that are not JSON, changed as text: with their JSON escapes decoded when that is
 * where a match shows (an earlier redaction that spanned tokens left a `pass\bword` as six
 * characters and a backspace's escape, QA), else as they are.
 */
function changeDecoded(text: string, change: (text: string) => string): string {
  const decoded = decodedEscapes(text);
  if (decoded !== text) {
    const changed = change(decoded);
    if (changed !== decoded) return changed;
  }
  return change(text);
}

const isJson = (text: string): boolean => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

/** A JSON escape: `\uXXXX`, or a backslash before one of the characters JSON escapes so. */
const JSON_ESCAPE = /\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt]))/g;
const ESCAPED: Record<string, string> = {
  '"': '"',
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
};

/**
 * Text with every JSON escape decoded, control characters and quotes included (`\u0020` as a
 * space, `\b` as a backspace): what a pattern spanning tokens is judged and redacted on, where
 * an escape must hide nothing. The result need not be JSON.
 */
const decodedEscapes = (text: string): string =>
  text.includes('\\')
    ? text.replace(JSON_ESCAPE, (_m, hex: string | undefined, c: string | undefined) =>
        hex !== undefined ? String.fromCharCode(parseInt(hex, 16)) : (ESCAPED[c as string] as string),
      )
    : text;

/**
 * Two keys a redaction made the same would reach the provider as one (a JSON parser keeps the
 * last), the other's value lost without a word: the call is denied instead, as a tool definition's
 * would be (QA: `sk-…1` and `sk-…2` both became `[key]`). Counted, so keys the arguments already
 * repeated (anywhere) do not hide one a redaction merged (QA).
 */
function refuseMergedKeys(before: string, after: string): void {
  if (repeatedKeyCount(after) > repeatedKeyCount(before))
    throw new Error("a redaction would make two keys of one object in a tool call's arguments the same");
}
