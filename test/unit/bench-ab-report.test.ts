import { median, parseBenchOutput, summarize, type Run } from '../../bench/ab-report';

/** What `npm run bench -- --only b --open-loop` prints, as it printed it on 2026-11-26. */
const output = (perSecond: number, worker: number, p99 = 110.5) => `
starting the stub, 1 API and 1 worker process(es) (node dist/main.js) on cp_bench_ce01826437 ...
node v20.20.2, 8 s per row; 5 s of warm-up first, then 1 s per row

(b) governed invoke, wait (sync)    50 callers   ${perSecond}/s   p50    65.20 ms   p99   ${p99} ms
                                   CPU µs per call: bench 122  stub 39  api 449  worker ${worker}  postgres 436  redis 227
                                   read/write syscalls per call: bench 2.4  stub 2.0  api 3.6  worker 6.1  redis 3.7
(b) governed invoke, wait (sync)     at ${Math.round(perSecond / 2)}/s    ${Math.round(perSecond / 2)}/s   p50    12.00 ms   p99    60.00 ms
                                   CPU µs per call: bench 300  stub 60  api 900  worker 1500  postgres 800  redis 400
(b) governed invoke, wait (sync)     at ${Math.round(perSecond * 0.8)}/s    ${Math.round(perSecond * 0.8)}/s   p50    20.00 ms   p99    95.00 ms   errors 2
                                   CPU µs per call: bench 200  stub 50  api 600  worker 1000  postgres 600  redis 300
`;

describe('reading a bench run', () => {
  it('takes each row with its req/s, p50, p99 and the CPU of every process', () => {
    const rows = parseBenchOutput(output(754, 753, 118.02));
    expect(rows.get('(b) governed invoke, wait (sync), 50 callers')).toEqual({
      perSecond: 754,
      p50: 65.2,
      p99: 118.02,
      cpu: { bench: 122, stub: 39, api: 449, worker: 753, postgres: 436, redis: 227 },
    });
  });

  it('keys open-loop rows by their place, since their rates differ from run to run', () => {
    const keys = [...parseBenchOutput(output(800, 700)).keys()];
    expect(keys).toEqual([
      '(b) governed invoke, wait (sync), 50 callers',
      '(b) governed invoke, wait (sync), open-loop row 1',
      '(b) governed invoke, wait (sync), open-loop row 2',
    ]);
    expect(
      parseBenchOutput(output(700, 700)).get('(b) governed invoke, wait (sync), open-loop row 2')?.p99,
    ).toBe(95);
  });

  it('finds no rows in output that has none (a bench that failed early)', () => {
    expect(parseBenchOutput('no compiled build in dist/: run `npm run build` first').size).toBe(0);
  });
});

describe('summing up alternated runs', () => {
  const run = (side: Run['side'], perSecond: number, worker: number): Run => ({
    side,
    rows: parseBenchOutput(output(perSecond, worker)),
  });

  it('gives the medians of each side and counts the pairs head was ahead in, in the order they ran', () => {
    const text = summarize([
      run('base', 800, 700),
      run('head', 840, 660),
      run('head', 700, 760),
      run('base', 760, 720),
      run('base', 810, 690),
      run('head', 880, 640),
    ]);
    const lines = text.split('\n');
    expect(lines[0]).toBe('(b) governed invoke, wait (sync), 50 callers: head ahead in 2 of 3 pairs');
    expect(lines[1]).toMatch(/req\/s, median: +800 → 840 \(\+5\.0%\)$/);
    // api 449 + postgres 436 + redis 227 = 1112, plus the worker's median (base 700, head 660)
    expect(lines[3]).toMatch(/service CPU µs per call, median: 1812 → 1772 \(-2\.2%\)$/);
    expect(text).toMatch(/worker +700 → 660 \(-5\.7%\)/);
    expect(text).not.toMatch(/bench +\d/);
    expect(text).toContain('open-loop row 2: head ahead in 2 of 3 pairs');
  });

  it('leaves out a row only one side printed', () => {
    const onlyHead = {
      side: 'head' as const,
      rows: new Map([['(c) async, 1 callers', parseBenchOutput(output(9, 9)).values().next().value!]]),
    };
    expect(summarize([run('base', 800, 700), onlyHead])).toBe('');
  });

  it('takes the median of an even count as the mean of the middle two', () => {
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([5])).toBe(5);
  });
});
