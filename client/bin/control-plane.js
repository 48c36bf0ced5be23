#!/usr/bin/env node
// Runs the compiled CLI when the client has been built, else the TypeScript source through tsx
// (a dev dependency of the repository), so a fresh checkout works without a build.
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const compiled = join(__dirname, '..', 'dist', 'cli', 'bin.js');
if (existsSync(compiled)) {
  require(compiled);
} else {
  require('tsx/cjs');
  require(join(__dirname, '..', 'src', 'cli', 'bin.ts'));
}
