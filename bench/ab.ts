/**
 * `npm run bench:ab -- --base <rev> [--pairs 3] [-- <npm run bench arguments>]`: the working tree
 * against an earlier commit, run alternately. This machine's speed drifts by 2-4× within an hour,
 * so a figure means something only beside a neighbour taken minutes apart. Pairs go ABBA, so
 * neither side always runs second.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseBenchOutput, summarize, type Run, type Side } from './ab-report';
import { benchOptions, exitWithUsage, NEEDS_STORES, positiveInt } from './bench-cli';

const USAGE = `
npm run bench:ab -- --base <rev> [--pairs 3] [-- <npm run bench arguments>]

Builds the working tree (head) and --base (a git revision, checked out in a temporary worktree
that shares this node_modules) and runs each one's own \`npm run bench\` in turn, --pairs times, the
order swapped every pair (base head, head base, ...). Prints each run as it ends, then for every
row the medians of each side and in how many pairs head was ahead. The bench arguments default to
--only b --seconds 8 --warmup 5 --concurrency 50.

${NEEDS_STORES}`;

const ROOT = join(__dirname, '..');
const DEFAULT_BENCH_ARGS = ['--only', 'b', '--seconds', '8', '--warmup', '5', '--concurrency', '50'];

function args() {
  const argv = process.argv.slice(2);
  const split = argv.indexOf('--');
  const own = split < 0 ? argv : argv.slice(0, split);
  const { text } = benchOptions(USAGE, ['base', 'pairs'], [], own);
  const base = text('base');
  if (!base) exitWithUsage(USAGE, '--base <rev> is required: the commit to compare the working tree with');
  return {
    base,
    pairs: positiveInt(USAGE, '--pairs', text('pairs'), 3),
    benchArgs: split < 0 ? DEFAULT_BENCH_ARGS : argv.slice(split + 1),
  };
}

/** Runs a command to its end, or throws what failed with its output (the worktree is removed then). */
function must(command: string, commandArgs: string[], cwd: string): void {
  const result = spawnSync(command, commandArgs, { cwd, encoding: 'utf8' });
  if (result.status !== 0)
    throw new Error(
      `${command} ${commandArgs.join(' ')} failed in ${cwd}:\n${result.stdout}${result.stderr}`,
    );
}

/** The compiled build the bench starts (`node dist/main.js`), made by the tree's own build script. */
function build(tree: string): void {
  must('npm', ['run', 'build'], tree);
}

function checkOut(rev: string): string {
  const tree = join(mkdtempSync(join(tmpdir(), 'bench-ab-')), 'base');
  const added = spawnSync('git', ['worktree', 'add', '--detach', tree, rev], { cwd: ROOT, encoding: 'utf8' });
  if (added.status !== 0) {
    rmSync(join(tree, '..'), { recursive: true, force: true });
    exitWithUsage(USAGE, `--base ${rev}: git could not check it out (${added.stderr.trim()})`);
  }
  symlinkSync(join(ROOT, 'node_modules'), join(tree, 'node_modules'));
  return tree;
}

function remove(tree: string): void {
  spawnSync('git', ['worktree', 'remove', '--force', tree], { cwd: ROOT });
  rmSync(join(tree, '..'), { recursive: true, force: true });
}

/** One bench run in `tree`; its rows are echoed as they come, so a long comparison shows progress. */
function bench(tree: string, side: Side, benchArgs: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(tree, 'bench/invoke.ts'), ...benchArgs], {
      cwd: tree,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const lines: string[] = [];
    createInterface({ input: child.stdout }).on('line', (line) => {
      lines.push(line);
      if (/\/s\s+p50|CPU µs|cores busy|GC per call/.test(line)) console.log(`  ${side}: ${line.trim()}`);
    });
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve({ side, rows: parseBenchOutput(lines.join('\n')) })
        : reject(new Error(`the bench in ${tree} exited with ${code}`)),
    );
  });
}

async function main(): Promise<void> {
  const { base, pairs, benchArgs } = args();
  const baseTree = checkOut(base);
  console.log(`building the working tree and ${base} ...`);
  process.once('SIGINT', () => {
    remove(baseTree);
    process.exit(130);
  });
  try {
    build(ROOT);
    build(baseTree);
    if (!existsSync(join(baseTree, 'bench/invoke.ts'))) throw new Error(`${base} has no bench/invoke.ts`);
    const runs: Run[] = [];
    for (let pair = 1; pair <= pairs; pair++) {
      const order: Side[] = pair % 2 === 1 ? ['base', 'head'] : ['head', 'base'];
      console.log(`pair ${pair} of ${pairs}: ${order.join(', then ')}`);
      for (const side of order) runs.push(await bench(side === 'base' ? baseTree : ROOT, side, benchArgs));
    }
    console.log(`\nhead (the working tree) against base (${base}), ${pairs} pairs:\n${summarize(runs)}`);
  } finally {
    remove(baseTree);
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
