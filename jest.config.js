/** Tests compile with SWC (fast, no type check: `tsc --noEmit` does that). */
module.exports = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] },
  testMatch: ['<rootDir>/test/**/*.test.ts', '<rootDir>/client/test/**/*.test.ts'],
  // Integration tests share two cores with PostgreSQL and Redis.
  maxWorkers: 2,
  testTimeout: 30000,
  // Before workerIdleMemoryLimit (below), each worker held a heap of about 1.7 GB by the end of a
  // full run. Measured with a diagnostic environment (2026-11-27, cold cache): both workers reached
  // their 'exit' event 2-3 ms after Jest's end message and were still tearing that heap down when
  // the 500-ms default ran out; Jest SIGTERMed them, they ended 0.86-0.89 s after the message, and
  // it printed "a worker process has failed to exit gracefully" in most full runs
  // (jestjs/jest#15984 added this option for that). A worker a leaked handle keeps alive never
  // exits, so it is still force-exited, and still reported, after this longer grace.
  workerGracefulExitTimeout: 3000,
  // A worker whose memory passed 1 GB after a test file is replaced before the next. Two alternated
  // pairs of full runs (2026-11-27, this 2-core VM): the largest process peaked at 1.56-1.61 GB
  // against 2.30-2.42 GB without, in 223 and 255 s against 228 and 270 s. What the heaps retain
  // between files was not looked into.
  workerIdleMemoryLimit: '1GB',
  setupFiles: ['<rootDir>/test/support/env.ts'],
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
};
