/**
 * Preloaded (`node --require`) into a service process by worker-async-hooks.test.ts: says on
 * stdout when an AsyncLocalStorage switches on, with where from, and when the last one that was
 * on switches off. On Node versions whose AsyncLocalStorage runs on promise hooks (20, 22) those
 * are the moments every promise of the process starts and stops paying for them.
 */
const { AsyncLocalStorage } = require('node:async_hooks');

const enable = AsyncLocalStorage.prototype._enable;
const disable = AsyncLocalStorage.prototype.disable;
let on = 0;
if (typeof enable === 'function') {
  process.stdout.write('async-hooks probe: watching\n');
  AsyncLocalStorage.prototype._enable = function probedEnable() {
    if (!this.enabled) {
      on++;
      const where = new Error().stack.split('\n').slice(2, 10).join('\n');
      process.stdout.write(`async-hooks probe: an AsyncLocalStorage switched on\n${where}\n`);
    }
    return enable.call(this);
  };
  AsyncLocalStorage.prototype.disable = function probedDisable() {
    if (this.enabled && --on === 0) process.stdout.write('async-hooks probe: all switched off\n');
    return disable.call(this);
  };
}
