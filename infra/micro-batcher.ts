interface Pending<I, O> {
  item: I;
  resolve(value: O): void;
  reject(err: unknown): void;
}

export interface BatcherOptions {
  /** Most items per flush. */
  maxBatch?: number;
  /** Flushes allowed in flight at once; more items wait and go together in the next one. */
  maxInFlight?: number;
}

/**
 * Group commit: items submitted while a flush is running go together in the next one, so under
 * load one statement carries many rows, and with a single caller nothing waits (an idle batcher
 * flushes on the next turn of the event loop). A failed batch is retried item by item, so one bad
 * item fails alone.
 */
export class MicroBatcher<I, O> {
  private pending: Pending<I, O>[] = [];
  private inFlight = 0;
  private scheduled = false;
  private readonly maxBatch: number;
  private readonly maxInFlight: number;

  constructor(
    private readonly flushItems: (items: I[]) => Promise<O[]>,
    options: BatcherOptions = {},
  ) {
    this.maxBatch = options.maxBatch ?? 200;
    this.maxInFlight = options.maxInFlight ?? 2;
  }

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.maxInFlight || this.pending.length === 0) return;
    this.scheduled = true;
    // setImmediate, not a microtask: lets the I/O callbacks of this loop turn add their items.
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    const batch = this.pending.splice(0, this.maxBatch);
    if (batch.length === 0) return;
    this.inFlight++;
    try {
      await this.deliver(batch);
    } finally {
      this.inFlight--;
      this.schedule();
    }
  }

  private async deliver(batch: Pending<I, O>[]): Promise<void> {
    try {
      const results = await this.flushItems(batch.map((p) => p.item));
      batch.forEach((p, i) => p.resolve(results[i] as O));
    } catch (err) {
      if (batch.length === 1) return (batch[0] as Pending<I, O>).reject(err);
      for (const p of batch) await this.deliver([p]);
    }
  }
}
