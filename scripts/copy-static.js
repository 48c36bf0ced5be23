// After `tsc -p tsconfig.build.json`: copies the files the service reads from disk beside its
// code (the pages' HTML, CSS, JavaScript and images under api/) into dist/, mirroring their paths.
const { cpSync, readdirSync } = require('node:fs');
const { join, relative } = require('node:path');

const root = join(__dirname, '..');
const isStatic = (name) => !name.endsWith('.ts');

function copyFrom(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) copyFrom(path);
    else if (isStatic(entry.name)) cpSync(path, join(root, 'dist', relative(root, path)));
  }
}

copyFrom(join(root, 'api'));
