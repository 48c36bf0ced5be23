/**
 * Thrown so the queue runs the job again in `delayMs`, without counting an attempt: the job's org
 * has used its share of something every org shares (a webhook delivery past the org's deliveries
 * in flight, an invocation past its share of a worker's slots). Once the job waits out its delay,
 * `owed` is asked: room given back between the refusal and the job's move to its delay found no
 * delayed job to wake, so the job wakes itself.
 */
export class OrgAtCapacity extends Error {
  constructor(
    readonly delayMs: number,
    readonly owed: () => Promise<boolean>,
    /** What the org has used up, for the log: "its cap of webhook deliveries in flight". */
    what: string,
  ) {
    super(`the org has ${what}; tried again in ${delayMs} ms`);
    this.name = 'OrgAtCapacity';
  }
}
