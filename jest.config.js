/** Tests compile with SWC (fast, no type check: `tsc --noEmit` does that). */
module.exports = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] },
  testMatch: ['<rootDir>/test/**/*.test.ts', '<rootDir>/client/test/**/*.test.ts'],
  // Integration tests share two cores with PostgreSQL and Redis.
  maxWorkers: 2,
  testTimeout: 30000,
  // By the end of a full run each worker holds a heap of about 1.7 GB. Measured with a diagnostic
  // environment (2026-11-27, cold cache): both workers reached their 'exit' event 2-3 ms after
  // Jest's end message and were still tearing that heap down when the 500-ms default ran out; Jest
  // SIGTERMed them, they ended 0.86-0.89 s after the message, and it printed "a worker process has
  // failed to exit gracefully" in most full runs (jestjs/jest#15984 added this option for that). A
  // worker a leaked handle keeps alive never exits, so it is still force-exited, and still
  // reported, after this longer grace.
  workerGracefulExitTimeout: 3000,
  setupFiles: ['<rootDir>/test/support/env.ts'],
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
};
