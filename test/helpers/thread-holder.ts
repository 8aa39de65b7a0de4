import { openGatewayDatabase } from '../../src/kernel/gateway-database.js';
import { sqlThreadStore } from '../../src/threads/sql-thread-store.js';

/**
 * A process that starts a thread in the Postgres of argv[2] (id argv[3], hold argv[4] ms), writes
 * one turn, says `holding` on stdout and then does nothing but renew its hold, until it is killed:
 * a replica that dies mid-thread, for sql-thread-store.int.test.ts.
 */
const [url, id, holdMs] = process.argv.slice(2) as [string, string, string];
const db = await openGatewayDatabase(url, { maxConnections: 1 });
const store = sqlThreadStore(db, { holdMs: Number(holdMs), holderName: `holder ${process.pid}` });
const writer = await store.create({ type: 'thread', id, directive: 'review_changes', inputs: {}, model: 'gpt-4o-mini', client: 'local', depth: 1, started_at: new Date().toISOString() });
await writer.append({ type: 'turn', turn: 1, text: 'Looking, from the replica about to die.' });
process.stdout.write('holding\n');
setInterval(() => undefined, 60_000);
