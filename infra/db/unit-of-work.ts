import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/postgresql';
import { conflict } from '../../domain/errors';
import type { Tx, UnitOfWork } from '../../domain/ports';
import { repositoriesFor } from './repositories';

/** One fresh EntityManager per unit of work, as MikroORM wants (no shared identity map). */
export class MikroUnitOfWork implements UnitOfWork {
  constructor(private readonly orm: MikroORM) {}

  async transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    try {
      return await this.orm.em.fork().transactional((em) => work(repositoriesFor(em)));
    } catch (err) {
      // A concurrent writer won a unique index the use case had checked: same answer as the check.
      if (err instanceof UniqueConstraintViolationException)
        throw conflict('a resource with that value already exists');
      throw err;
    }
  }

  read<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return work(repositoriesFor(this.orm.em.fork()));
  }
}
