import { spawnSync } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { bufferedDestination } from '../../infra/logging/buffered-stdout';
import { ROOT } from '../support/service-process';
import { eventually } from '../support/eventually';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cp-log-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const linesIn = (file: string) => readFileSync(file, 'utf8').split('\n').filter(Boolean);

function logTo(name: string, flushMs: number) {
  const file = join(dir, name);
  // The descriptor stays open: a write still in flight would fail on a closed one.
  const destination = bufferedDestination(openSync(file, 'w'), flushMs);
  const logger = pino({ base: null }, destination);
  return { file, logger, done: () => destination.close() };
}

describe('JSON log lines written in batches', () => {
  it('holds lines back, then writes them all within the flush interval', async () => {
    const { file, logger, done } = logTo('timer.log', 100);
    for (let i = 0; i < 20; i++) logger.info({ i }, 'line');
    expect(linesIn(file)).toEqual([]);
    const lines = await eventually(() => linesIn(file).length === 20 && linesIn(file), 3_000);
    expect(lines.map((l) => (JSON.parse(l) as { i: number }).i)).toEqual([...Array(20).keys()]);
    done();
  });

  it('writes at once when the lines waiting pass the buffer size, without the timer', async () => {
    const { file, logger, done } = logTo('size.log', 60_000);
    const big = 'x'.repeat(1024);
    for (let i = 0; i < 40; i++) logger.info({ big }, 'line');
    await eventually(() => linesIn(file).length > 0, 3_000);
    done();
  });

  it('writes what waits when the process exits', () => {
    const script = `
      const { createLogger } = require('./dist/infra/logger');
      const logger = createLogger('info');
      for (let i = 0; i < 3; i++) logger.info({ i }, 'before exit');
      process.exit(0);`;
    const run = spawnSync(process.execPath, ['-e', script], { cwd: ROOT, encoding: 'utf8' });
    expect(run.status).toBe(0);
    expect(run.stdout.split('\n').filter((l) => l.includes('before exit'))).toHaveLength(3);
  });
});
