import { KiwiError } from '../../base/errors.js';
import type { SqlDb } from './sql-db.js';

/**
 * Brings a database's schema up to date: each migration runs once, in order, in one transaction
 * with its record in `kiwi_migrations`, so a crash leaves it applied or not at all. A lock keeps
 * two gateways starting on one server from applying the same migration twice.
 */

export interface Migration {
  version: number;
  name: string;
  /** One statement each (parameters are not allowed in DDL). */
  statements: readonly string[];
}

export async function migrate(db: SqlDb, migrations: readonly Migration[]): Promise<number[]> {
  const versions = migrations.map((m) => m.version);
  if (versions.some((v, i) => !Number.isInteger(v) || v < 1 || (i > 0 && v <= (versions[i - 1] as number)))) {
    throw new KiwiError('INTERNAL', `migrations must have increasing whole version numbers from 1, got ${versions.join(', ')}`);
  }
  return db.transaction(async (tx) => {
    await tx.query("select pg_advisory_xact_lock(hashtext('kiwi-migrations'))");
    await tx.query('create table if not exists kiwi_migrations (version integer primary key, name text not null, applied_at text not null)');
    const done = new Set((await tx.query<{ version: number }>('select version from kiwi_migrations')).map((r) => r.version));
    const newest = Math.max(0, ...done);
    if (newest > (versions.at(-1) ?? 0)) {
      throw new KiwiError('INVALID_INPUT', `the database's schema is at version ${newest}, newer than this gateway knows (${versions.at(-1) ?? 0}); run a newer gateway, or point DATABASE_URL at another database`);
    }
    const applied: number[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      for (const statement of m.statements) await tx.query(statement);
      await tx.query('insert into kiwi_migrations (version, name, applied_at) values ($1, $2, $3)', [m.version, m.name, new Date().toISOString()]);
      applied.push(m.version);
    }
    return applied;
  });
}
