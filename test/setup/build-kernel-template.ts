// `node --import tsx test/setup/build-kernel-template.ts DIR`: makes an embedded kernel database
// in DIR (PGlite's initdb, then the migrations). global-setup.ts runs it as a process of its own
// because PGlite computes on the thread that calls it: ~5 s during which, in the setup's own
// process, nothing else the setup does could take a turn.
import { KERNEL_MIGRATIONS } from '../../src/kernel/kernel-migrations.js';
import { migrate } from '../../src/store/sql/migrate.js';
import { openPgliteDb } from '../../src/store/sql/pglite-db.js';

const dir = process.argv[2];
if (dir === undefined) throw new Error('usage: build-kernel-template.ts DIR');
const db = await openPgliteDb(dir);
try {
  await migrate(db, KERNEL_MIGRATIONS);
} finally {
  await db.close();
}
