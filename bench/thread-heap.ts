import { Session } from 'node:inspector';

/**
 * The heap of this process's worker thread, after a forced GC, through the inspector: Node 20 has
 * no `worker.getHeapStatistics()` (22.16+), and a `worker.getHeapSnapshot()` per sample took about
 * 25 s and grew the main heap by up to 80 MB and RSS by hundreds of MB each time (Node 20.20.2).
 * Watches the worker started last; start this before it.
 */
export class ThreadHeap {
  private readonly session = new Session();
  private worker: string | null = null;
  private nextId = 1;
  private readonly answers = new Map<number, (result: unknown) => void>();

  constructor() {
    this.session.connect();
    this.session.on('NodeWorker.attachedToWorker', ({ params }) => (this.worker = params.sessionId));
    this.session.on('NodeWorker.detachedFromWorker', ({ params }) => {
      if (this.worker === params.sessionId) this.worker = null;
    });
    this.session.on('NodeWorker.receivedMessageFromWorker', ({ params }) => {
      const { id, result } = JSON.parse(params.message) as { id?: number; result?: unknown };
      if (id === undefined) return;
      this.answers.get(id)?.(result);
      this.answers.delete(id);
    });
    this.session.post('NodeWorker.enable', { waitForDebuggerOnStart: false });
  }

  /** Bytes in use in the worker's heap, after a full GC there if `collect`; null without a worker. */
  async usedBytes(collect = true): Promise<number | null> {
    if (!this.worker) return null;
    if (collect) await this.ask(this.worker, 'HeapProfiler.collectGarbage');
    const { usedSize } = (await this.ask(this.worker, 'Runtime.getHeapUsage')) as { usedSize: number };
    return usedSize;
  }

  close(): void {
    this.session.disconnect();
  }

  private ask(sessionId: string, method: string): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the worker did not answer ${method}`)), 60_000);
      this.answers.set(id, (result) => (clearTimeout(timer), resolve(result)));
      this.session.post('NodeWorker.sendMessageToWorker', {
        sessionId,
        message: JSON.stringify({ id, method }),
      });
    });
  }
}
