import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261122000001Foundation } from './Migration20261122000001Foundation';

/** Every migration, in order. Listed explicitly so the same code runs under tsx, swc and tsc. */
export const MIGRATIONS: MigrationObject[] = [
  { name: 'Migration20261122000001Foundation', class: Migration20261122000001Foundation },
];
