import type { CompletionResult, StreamDelta } from '../../domain/providers';
import { PIECE, secretForms } from './secret-pieces';

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

  constructor(secret: string) {
    const forms = secret.length >= PIECE ? secretForms(secret).filter((f) => f.length >= PIECE) : [];
    this.pattern = forms.length ? new RegExp(forms.map(escaped).join('|'), 'gi') : null;
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

  /** A streamed piece: a secret whole within one piece is taken out; one split across pieces is not. */
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
