import { OutputTail } from '../../bench/output-tail';

const ready = '{"level":30,"time":1,"msg":"ready: listening on 127.0.0.1:8080"}\n';
const access = (i: number) =>
  `{"level":30,"request_id":"req_${i}","path":"/v1/llm/invoke","msg":"request"}\n`;

describe("the bench's tail of a service process's output", () => {
  it('says ready once, on the chunk that completes the ready line, however it was split', () => {
    const output = new OutputTail();
    expect(output.add('{"level":30,"msg":"migrations applied"}\n')).toBe(false);
    expect(output.add(ready.slice(0, 25))).toBe(false);
    expect(output.add(ready.slice(25))).toBe(true);
    expect(output.add(access(1))).toBe(false);
    expect(output.add(ready)).toBe(false);
  });

  it('keeps only the last characters, whatever a long run prints', () => {
    const output = new OutputTail(1000);
    output.add(ready);
    for (let i = 0; i < 10_000; i++) output.add(access(i));
    expect(output.text.length).toBe(1000);
    expect(output.text.endsWith(access(9999))).toBe(true);
    expect(output.text).not.toContain('req_9000"');
  });

  it('still finds a ready line printed after more than a tail of other output', () => {
    const output = new OutputTail(200);
    for (let i = 0; i < 50; i++) expect(output.add(access(i))).toBe(false);
    expect(output.add(ready)).toBe(true);
  });
});
