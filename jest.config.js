/** Tests compile with SWC (fast, no type check: `tsc --noEmit` does that). */
module.exports = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] },
  testMatch: ['<rootDir>/test/**/*.test.ts', '<rootDir>/client/test/**/*.test.ts'],
  // Integration tests share two cores with PostgreSQL and Redis.
  maxWorkers: 2,
  testTimeout: 30000,
  setupFiles: ['<rootDir>/test/support/env.ts'],
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
};
