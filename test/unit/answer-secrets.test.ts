import { AnswerScrubber } from '../../infra/providers/answer-secrets';

const SECRET = 'sk-proj-QAsecretZZ9xY8wV7uT6sR5qP4oN3mL2kJ1';

describe("a provider's answer, cleared of the secret it was sent", () => {
  const scrub = new AnswerScrubber(SECRET);

  it('takes out the secret as is, in any ASCII case, URL-encoded, in hex and in base64', () => {
    const b64 = Buffer.from(SECRET).toString('base64');
    const hex = Buffer.from(SECRET).toString('hex').toUpperCase();
    const text = `a ${SECRET} b ${SECRET.toUpperCase()} c ${encodeURIComponent(SECRET)} d ${hex} e Basic ${b64}`;
    const out = scrub.text(text);
    // base64 is matched in whole groups of the secret's bytes: its last byte or two may be left.
    expect(out).toBe(
      `a [redacted] b [redacted] c [redacted] d [redacted] e Basic [redacted]${b64.slice(-4)}`,
    );
  });

  it('leaves prose alone: provider-style shapes in an answer are the model writing', () => {
    const prose = 'Send the Bearer token in the header; keys look like sk-proj-EXAMPLE1234.';
    expect(scrub.text(prose)).toBe(prose);
  });

  it('clears tool calls and streamed pieces too', () => {
    const result = scrub.result({
      output: {
        role: 'assistant',
        content: `key=${SECRET}`,
        toolCalls: [
          { id: SECRET, type: 'function', function: { name: 'save', arguments: `{"k":"${SECRET}"}` } },
        ],
      },
      usage: { inputTokens: 1, outputTokens: 1 },
      model: 'm',
    });
    expect(JSON.stringify(result)).not.toContain(SECRET);
    expect(result.output.content).toBe('key=[redacted]');
    expect(result.output.toolCalls?.[0]?.function.arguments).toBe('{"k":"[redacted]"}');
    const piece = scrub.delta({ content: `x ${SECRET}`, toolCalls: [{ index: 0, arguments: SECRET }] });
    expect(piece).toEqual({ content: 'x [redacted]', toolCalls: [{ index: 0, arguments: '[redacted]' }] });
  });

  it('leaves an answer alone when the secret is shorter than 8 characters', () => {
    expect(new AnswerScrubber('abc123').text('abc123 is the answer')).toBe('abc123 is the answer');
  });

  describe('a streamed answer', () => {
    /** Streams `text` cut at `cuts`, and gives back what the client received, piece by piece. */
    function streamed(text: string, cuts: number[], field: 'content' | 'arguments' = 'content') {
      const stream = scrub.stream();
      if (!stream) throw new Error('no stream scrubber');
      const bounds = [0, ...cuts, text.length];
      const sent = bounds.slice(1).map((end, i) => {
        const piece = text.slice(bounds[i], end);
        const delta =
          field === 'content' ? { content: piece } : { toolCalls: [{ index: 0, arguments: piece }] };
        return stream.delta(delta);
      });
      sent.push(stream.flush());
      const textOf = (d: (typeof sent)[number]) =>
        (field === 'content' ? d?.content : d?.toolCalls?.[0]?.arguments) ?? '';
      return { pieces: sent.map(textOf), whole: sent.map(textOf).join('') };
    }

    it('takes out a secret split across two pieces, wherever it is cut', () => {
      const text = `the key is ${SECRET}, keep it`;
      const start = text.indexOf(SECRET);
      for (let cut = start; cut <= start + SECRET.length; cut++)
        expect([cut, streamed(text, [cut]).whole]).toEqual([cut, 'the key is [redacted], keep it']);
    });

    it('takes it out of tool call arguments split across pieces, and in hex cut in three', () => {
      const args = `{"token":"${SECRET}"}`;
      expect(streamed(args, [12, 30], 'arguments').whole).toBe('{"token":"[redacted]"}');
      const hex = `0x${Buffer.from(SECRET).toString('hex')}!`;
      expect(streamed(hex, [10, 50, 90]).whole).toBe('0x[redacted]!');
    });

    it('sends text that cannot start the secret at once, holding back only what could', () => {
      const { pieces } = streamed('Hello there. Go home', [6, 13]);
      expect(pieces).toEqual(['Hello ', 'there. ', 'Go home', '']);
      // "s" may start "sk-proj-...": it waits for the next piece, which shows it does not.
      expect(streamed('yes sir', [3]).pieces).toEqual(['ye', 's sir', '']);
    });
  });
});
