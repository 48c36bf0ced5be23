/** How often a shutdown that waits on the workers checks that Redis still answers. */
const REDIS_CHECK_EVERY_MS = 250;

/**
 * Waits for `closing` (the workers letting their jobs in flight finish) while Redis answers. A
 * job needs Redis to record its end, and BullMQ's connections wait for Redis without limit, so
 * once Redis is gone (restarted, or stopped by its operator) the wait would last until the
 * shutdown timeout. Then this gives up with an error that says what happens to those jobs, and
 * the shutdown goes on to its next step.
 */
export async function closeOrGiveUp(
  closing: Promise<unknown>,
  redisAnswers: () => Promise<unknown>,
  everyMs = REDIS_CHECK_EVERY_MS,
): Promise<void> {
  let closed = false;
  const done = closing.then(() => {
    closed = true;
  });
  for (;;) {
    let tick: NodeJS.Timeout | undefined;
    await Promise.race([done, new Promise((resolve) => (tick = setTimeout(resolve, everyMs)))]);
    // A pending tick would hold the process (and a test runner's worker) open after shutdown.
    clearTimeout(tick);
    if (closed) return;
    const answers = await redisAnswers().then(
      () => true,
      () => false,
    );
    if (closed) return;
    if (!answers)
      throw new Error(
        'Redis is gone, so jobs in flight cannot record their end; BullMQ takes them up again (stalled-job check) once it is back',
      );
  }
}
