import { GcTrace, gcLine, gcPerCall, sumTallies } from '../../bench/gc-trace';

// Lines as node --trace-gc-nvp prints them (fields cut down; the real ones carry about a hundred).
const scavenge = (promoted: number, pause: number) =>
  `[5976:0x23cbed00]     7740 ms: pause=${pause} mutator=33.5 gc=s reduce_memory=0 promoted=${promoted} semi_space_copied=1189088 nodes_promoted=0\n`;
const markCompact = (pause: number) =>
  `[5976:0x23cbed00]     9120 ms: pause=${pause} mutator=812.0 gc=mc reduce_memory=0 promoted=0 mark=12.1\n`;

describe('the bench GC trace', () => {
  it('tallies scavenges, what they promoted, mark-compacts and pauses, per process', () => {
    const trace = new GcTrace();
    trace.feed(1, scavenge(1000, 0.5) + '{"level":30,"msg":"ready: listening"}\n' + scavenge(3000, 1.5));
    trace.feed(2, markCompact(40));
    expect(trace.read(1)).toEqual({ scavenges: 2, promotedBytes: 4000, markCompacts: 0, pauseMs: 2 });
    expect(trace.read(2)).toEqual({ scavenges: 0, promotedBytes: 0, markCompacts: 1, pauseMs: 40 });
    expect(trace.read(3)).toEqual({ scavenges: 0, promotedBytes: 0, markCompacts: 0, pauseMs: 0 });
  });

  it('counts a line split across chunks once, when its end arrives', () => {
    const trace = new GcTrace();
    const line = scavenge(2048, 1);
    trace.feed(1, line.slice(0, 40));
    expect(trace.read(1).scavenges).toBe(0);
    trace.feed(1, line.slice(40, 90));
    trace.feed(1, line.slice(90));
    expect(trace.read(1)).toEqual({ scavenges: 1, promotedBytes: 2048, markCompacts: 0, pauseMs: 1 });
  });

  it("reports a row's figures per call: promoted KB, pause µs, scavenges per 1000 calls, mark-compacts", () => {
    const before = { scavenges: 10, promotedBytes: 1_000_000, markCompacts: 1, pauseMs: 50 };
    const after = sumTallies([
      { scavenges: 15, promotedBytes: 2_000_000, markCompacts: 1, pauseMs: 60 },
      { scavenges: 5, promotedBytes: 1_048_576, markCompacts: 1, pauseMs: 40 },
    ]);
    const per = gcPerCall(before, after, 500);
    expect(per).toEqual({ scavenges: 0.02, promotedBytes: 4097.152, markCompacts: 1, pauseMs: 0.1 });
    expect(gcLine({ worker: per })).toBe(
      'GC per call: worker promoted 4.0 KB, pause 100 µs, 20.0 scavenges per 1000, 1 mark-compacts',
    );
  });
});
