import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * MikroORM runs each transaction and flush inside AsyncLocalStorages of its own (two of them
 * module-private) and leaves them on. On Node 20 and 22 a storage that is on makes every promise
 * of the process run async hooks: in an API under invoke load, whose path never touches MikroORM,
 * switching them off after a sign-up cut its CPU per invoke by 12% (`npm run bench:ab`, 3 pairs).
 * So MikroORM's storages are noted as they first switch on, and switched off whenever no unit of
 * work is in flight (unit-of-work.ts): none of them holds a store then, and the next unit of work
 * switches them on again. Storages of anything else are left alone. Node versions whose
 * AsyncLocalStorage does not run on promise hooks (24 builds it on AsyncContextFrame, without
 * `_enable`) have nothing to switch off.
 */
type Storage = AsyncLocalStorage<unknown> & { enabled?: boolean };

/** Patches `_enable` once per process (test files load this module once each), noting MikroORM's storages. */
function watch(): Set<Storage> {
  const mikroOrms = new Set<Storage>();
  const others = new WeakSet<Storage>();
  const prototype = AsyncLocalStorage.prototype as unknown as { _enable?: (this: Storage) => void };
  const enable = prototype._enable;
  if (typeof enable !== 'function') return mikroOrms;
  prototype._enable = function noteMikroOrms(this: Storage) {
    if (!mikroOrms.has(this) && !others.has(this)) {
      // Once per storage: whose code switches it on (MikroORM's frames are within the first ten).
      if (new Error().stack?.includes('@mikro-orm')) mikroOrms.add(this);
      else others.add(this);
    }
    enable.call(this);
  };
  return mikroOrms;
}

const WATCHED = Symbol.for('control-plane.mikro-orm-storages');
const holder = globalThis as { [WATCHED]?: Set<Storage> };
const mikroOrms = (holder[WATCHED] ??= watch());

/** Switches off every MikroORM storage that is on. Only while no unit of work is in flight. */
export function switchOffMikroOrmStorages(): void {
  for (const storage of mikroOrms) storage.disable();
}
