import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/postgresql';
import { conflict } from '../../domain/errors';
import type { Tx, UnitOfWork } from '../../domain/ports';
import { switchOffMikroOrmStorages } from './mikro-orm-storages';
import { repositoriesFor } from './repositories';

/** This process's, over every unit of work: MikroORM's async hooks go off when none is in flight. */
let inFlight = 0;

async function counted<T>(work: () => Promise<T>): Promise<T> {
  inFlight++;
  try {
    return await work();
  } finally {
    if (--inFlight === 0) switchOffMikroOrmStorages();
  }
}

/** One fresh EntityManager per unit of work, as MikroORM wants (no shared identity map). */
export class MikroUnitOfWork implements UnitOfWork {
  constructor(private readonly orm: MikroORM) {}

  async transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    try {
      return await counted(() => this.orm.em.fork().transactional((em) => work(repositoriesFor(em))));
    } catch (err) {
      // A concurrent writer won a unique index the use case had checked: same answer as the check.
      if (err instanceof UniqueConstraintViolationException)
        throw conflict('a resource with that value already exists');
      throw err;
    }
  }

  read<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return counted(() => work(repositoriesFor(this.orm.em.fork())));
  }
}
