import type { RunView } from '../../domain/invocations/invocation-store';
import type { InvocationStage, StageQueue } from '../../domain/invocations/signals';
import type { InvocationJob } from '../../domain/jobs';
import { handOverHere } from '../../workers/invocation-processors';

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
    const here = handOverHere(queue);
    await here.queue.enqueue('invocation.run', job, loaded);
    expect(here.handedOver()).toEqual({ job, loaded });
    expect(sent).toEqual([]);
  });

  it("sends one without a row (an approval's invocation) to the queue, where the approval's job has its id", async () => {
    const { queue, sent } = recordingQueue();
    const here = handOverHere(queue);
    await here.queue.enqueue('invocation.run', job);
    expect(here.handedOver()).toBeNull();
    expect(sent).toEqual([['invocation.run', 'inv_1']]);
  });
});
