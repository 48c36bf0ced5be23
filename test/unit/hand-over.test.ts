import type { Decided } from '../../domain/invocations/evaluate-invocation';
import type { RunView } from '../../domain/invocations/invocation-store';
import type { InvocationStage, StageQueue } from '../../domain/invocations/signals';
import type { InvocationJob } from '../../domain/jobs';
import { runHere } from '../../workers/invocation-processors';

/** A queue that records what reaches Redis (unit tests only). */
function recordingQueue() {
  const sent: [InvocationStage, string][] = [];
  const queue: StageQueue = {
    submit: async () => undefined,
    enqueue: async (stage, job) => void sent.push([stage, job.invocation_id]),
    state: async () => 'alive',
    requeue: async () => undefined,
  };
  return { queue, sent };
}

const job: InvocationJob = { invocation_id: 'inv_1', org_id: 'org_1', trace: {} };
const loaded = { approvedDigest: null } as RunView;

describe("the submit job's hand-over to the run stage", () => {
  it('keeps a hand-over with the row this job wrote, to run it in this job', async () => {
    const { queue, sent } = recordingQueue();
    const decided: Decided = { outcome: 'admitted', next: job, run: loaded, decidedNow: true };
    expect(await runHere(decided, queue)).toEqual({ job, admitted: { view: loaded, decidedNow: true } });
    expect(sent).toEqual([]);
  });

  it('says when an earlier attempt of the job decided it, so the run checks it again', async () => {
    const { queue } = recordingQueue();
    const decided: Decided = { outcome: 'admitted', next: job, run: loaded, decidedNow: false };
    expect(await runHere(decided, queue)).toEqual({ job, admitted: { view: loaded, decidedNow: false } });
  });

  it("sends one without a row (an approval's invocation) to the queue, where the approval's job has its id", async () => {
    const { queue, sent } = recordingQueue();
    const decided: Decided = { outcome: 'admitted', next: job, run: null, decidedNow: false };
    expect(await runHere(decided, queue)).toBeNull();
    expect(sent).toEqual([['invocation.run', 'inv_1']]);
  });

  it('runs and sends nothing for an invocation the guardian stage did not admit', async () => {
    const { queue, sent } = recordingQueue();
    expect(await runHere({ outcome: 'awaiting_approval' }, queue)).toBeNull();
    expect(sent).toEqual([]);
  });
});
