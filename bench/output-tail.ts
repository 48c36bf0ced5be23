/**
 * What a service process printed, for the error if it exits early: the last `limit` characters
 * only. At `LOG_LEVEL=info` the service writes an access line per request for as long as a bench
 * runs, tens of megabytes in a long one. Appending every chunk to one string and searching it for
 * the ready line, as the harness once did, made V8 flatten (copy) the whole string on every chunk:
 * work that grew with the run, in the load generator's process, on the cores the service needs.
 */
export class OutputTail {
  private tail = '';
  private ready = false;

  constructor(private readonly limit = 20_000) {}

  /** Adds a chunk of output; true only for the chunk that completes the process's ready line. */
  add(chunk: string): boolean {
    this.tail = (this.tail + chunk).slice(-this.limit);
    if (this.ready || !/"msg":"ready/.test(this.tail)) return false;
    this.ready = true;
    return true;
  }

  get text(): string {
    return this.tail;
  }
}
