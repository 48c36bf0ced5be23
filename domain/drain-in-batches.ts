/**
 * Runs `batch` (which handles up to `size` rows and returns how many) until a batch comes back
 * short, reporting the running total after each that moved any. For work that takes its rows
 * out of the set it reads (resealing under the current key), so no cursor is needed.
 */
export async function drainInBatches(
  size: number,
  batch: () => Promise<number>,
  onProgress: (done: number) => void,
): Promise<number> {
  let done = 0;
  for (;;) {
    const moved = await batch();
    done += moved;
    if (moved > 0) onProgress(done);
    if (moved < size) return done;
  }
}
