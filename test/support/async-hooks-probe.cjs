/**
 * Preloaded (`node --require`) into a service process by worker-async-hooks.test.ts: says on
 * stdout when an AsyncLocalStorage switches on, with where from. On Node versions whose
 * AsyncLocalStorage runs on promise hooks (20, 22) that is the moment every promise of the process
 * starts paying for them.
 */
const { AsyncLocalStorage } = require('node:async_hooks');

const enable = AsyncLocalStorage.prototype._enable;
if (typeof enable === 'function') {
  process.stdout.write('async-hooks probe: watching\n');
  AsyncLocalStorage.prototype._enable = function probedEnable() {
    if (!this.enabled) {
      const where = new Error().stack.split('\n').slice(2, 10).join('\n');
      process.stdout.write(`async-hooks probe: an AsyncLocalStorage switched on\n${where}\n`);
    }
    return enable.call(this);
  };
}
