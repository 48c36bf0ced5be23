import type { CompletionResult, StreamDelta } from '../../domain/providers';
import { foldAscii, PIECE, secretForms } from './secret-pieces';

const REDACTED = '[redacted]';
const escaped = (form: string) => form.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * A provider's answer less the credential's secret: a provider, or a proxy before it, that echoes
 * the request's headers would hand the key to whoever may read the invocation (a `read` key, say).
 * Only whole forms of the secret are taken out (as is, URL-encoded, hex, base64 at each alignment,
 * ASCII case ignored), not the shapes error messages are scrubbed of: an answer is the model's
 * text, and "Bearer token" in it is prose. A secret shorter than 8 characters is left alone: it
 * could as well be a word of the answer.
 */
export class AnswerScrubber {
  private readonly pattern: RegExp | null;
  /** The forms, ASCII lower-cased, as the pattern matches them; what they start with; the longest. */
  private readonly forms: string[];
  private readonly firsts: Set<string>;
  private readonly longest: number;

  constructor(secret: string) {
    const forms = secret.length >= PIECE ? secretForms(secret).filter((f) => f.length >= PIECE) : [];
    this.pattern = forms.length ? new RegExp(forms.map(escaped).join('|'), 'gi') : null;
    this.forms = forms.map(foldAscii);
    this.firsts = new Set(this.forms.map((f) => f.charAt(0)));
    this.longest = Math.max(0, ...this.forms.map((f) => f.length));
  }

  /** Scrubs one streamed answer's pieces, holding back what could be the start of a secret. */
  stream(): StreamScrub | null {
    return this.pattern ? new StreamScrub(this) : null;
  }

  /**
   * How many characters at the end of `text` could begin a form of the secret that the next
   * piece completes: the longest end of it that is the start of a form (usually 0 or 1).
   */
  heldTail(text: string): number {
    if (this.longest < 2) return 0;
    const folded = foldAscii(text.slice(1 - this.longest));
    for (let start = 0; start < folded.length; start++) {
      if (!this.firsts.has(folded.charAt(start))) continue;
      const end = folded.slice(start);
      if (this.forms.some((f) => f.startsWith(end))) return end.length;
    }
    return 0;
  }

  text(text: string): string {
    return this.pattern && text ? text.replace(this.pattern, REDACTED) : text;
  }

  result(result: CompletionResult): CompletionResult {
    if (!this.pattern) return result;
    const { content, toolCalls } = result.output;
    const output: CompletionResult['output'] = { ...result.output, content: this.text(content) };
    if (toolCalls)
      output.toolCalls = toolCalls.map((t) => ({
        ...t,
        id: this.text(t.id),
        function: { name: this.text(t.function.name), arguments: this.text(t.function.arguments) },
      }));
    return { ...result, output };
  }

  /** One piece on its own: a secret whole within it is taken out (a stream's pieces: StreamScrub). */
  delta(delta: StreamDelta): StreamDelta {
    if (!this.pattern) return delta;
    const out: StreamDelta = { ...delta };
    if (delta.content) out.content = this.text(delta.content);
    if (delta.toolCalls)
      out.toolCalls = delta.toolCalls.map((t) => ({
        ...t,
        ...(t.id ? { id: this.text(t.id) } : {}),
        ...(t.name ? { name: this.text(t.name) } : {}),
        ...(t.arguments ? { arguments: this.text(t.arguments) } : {}),
      }));
    return out;
  }
}

/**
 * The pieces of one streamed answer, as its client receives them: a secret split across two
 * pieces is taken out too. The end of each text (the answer, and each tool call's arguments) that
 * could be the start of a secret form is held back and sent with the next piece, or by `flush`
 * when the stream ends; everything before it is scrubbed and sent at once.
 */
export class StreamScrub {
  private content = '';
  private readonly args = new Map<number, string>();

  constructor(private readonly scrubber: AnswerScrubber) {}

  /** What to send of this piece now; null when all of it is held back. */
  delta(delta: StreamDelta): StreamDelta | null {
    const out: StreamDelta = {};
    if (delta.content) {
      const [sent, held] = this.split(this.content + delta.content);
      this.content = held;
      if (sent) out.content = sent;
    }
    if (delta.toolCalls) out.toolCalls = delta.toolCalls.map((t) => this.toolCall(t));
    return out.content !== undefined || out.toolCalls?.length ? out : null;
  }

  /** What is still held, once the stream has ended; null when nothing is. */
  flush(): StreamDelta | null {
    const out: StreamDelta = {};
    if (this.content) out.content = this.content;
    const calls = [...this.args]
      .filter(([, held]) => held)
      .map(([index, held]) => ({ index, arguments: held }));
    if (calls.length) out.toolCalls = calls;
    this.content = '';
    this.args.clear();
    return out.content !== undefined || out.toolCalls ? out : null;
  }

  private toolCall(t: NonNullable<StreamDelta['toolCalls']>[number]) {
    const call = { ...t };
    if (t.id) call.id = this.scrubber.text(t.id);
    if (t.name) call.name = this.scrubber.text(t.name);
    if (t.arguments) {
      const [sent, held] = this.split((this.args.get(t.index) ?? '') + t.arguments);
      this.args.set(t.index, held);
      if (sent) call.arguments = sent;
      else delete call.arguments;
    }
    return call;
  }

  /** The text scrubbed, cut into what goes now and what is held for the next piece. */
  private split(text: string): [string, string] {
    const scrubbed = this.scrubber.text(text);
    const cut = scrubbed.length - this.scrubber.heldTail(scrubbed);
    return [scrubbed.slice(0, cut), scrubbed.slice(cut)];
  }
}
