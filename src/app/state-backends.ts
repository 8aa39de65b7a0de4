import path from 'node:path';
import type { AuditLog } from '../audit/audit-log.js';
import type { AuditQuery } from '../audit/audit-query.js';
import { readAuditTail } from '../audit/audit-reader.js';
import type { AuditRecord } from '../audit/audit-record.js';
import { fileAuditQuery } from '../audit/file-audit-query.js';
import { createSqlAuditLog } from '../audit/sql-audit-log.js';
import { sqlAuditQuery } from '../audit/sql-audit-query.js';
import { readSqlAuditTail } from '../audit/sql-audit-reader.js';
import { openBudgetLedger, type BudgetLedger } from '../budgets/budget-ledger.js';
import { openSqlBudgetLedger } from '../budgets/sql-budget-ledger.js';
import { fileKeyStore, KEY_FILE, type KeyStore } from '../clients/key-store.js';
import { sqlKeyStore } from '../clients/sql-key-store.js';
import { databaseUrlOf, openGatewayDatabase } from '../kernel/gateway-database.js';
import type { SqlDb } from '../store/sql/sql-db.js';
import { fileThreadStore } from '../threads/file-thread-store.js';
import { sqlThreadStore } from '../threads/sql-thread-store.js';
import type { ThreadStore } from '../threads/thread-store.js';

/** Where the ledger of what each client used lives, without a shared database. */
export const BUDGET_STATE_DIR = path.join('.ai', 'state', 'budgets');
const AUDIT_DIR = path.join('.ai', 'logs', 'audit');

/**
 * Where a project's shared state lives: the Postgres that gateways share (DATABASE_URL), else
 * files under the project's `.ai/`. This is the one place that chooses; the gateway and each
 * command that reads keys, audit records, the budgets' ledger or threads asks it, so that a
 * `kiwi` command and the gateway never look in two different places.
 */
export interface StateBackends {
  /** The shared database, when DATABASE_URL is set. */
  readonly database: SqlDb | undefined;
  keys(): KeyStore;
  /** `holdMs`: how long a process that stopped renewing keeps its threads from others (Postgres only). */
  threads(options?: { holdMs?: number }): ThreadStore;
  /** The audit log a gateway session writes to the shared table; undefined: the project's files (open-project.ts). */
  auditLog: ((session: string, onWarning?: (line: string) => void) => AuditLog) | undefined;
  auditQuery(): AuditQuery;
  auditTail(options: { limit: number; session?: string }): Promise<AuditRecord[]>;
  budgetLedger(options: { retainMs: number; onError?: (line: string) => void }): Promise<BudgetLedger>;
  /** Where each is, for people. */
  where: { audit: string; budgets: string };
  close(): Promise<void>;
}

/** `maxConnections`: the pool for the shared database (a command needs one). */
export async function openStateBackends(root: string, env: Readonly<Record<string, string | undefined>>, options: { maxConnections?: number } = {}): Promise<StateBackends> {
  const url = databaseUrlOf(env);
  const db = url === undefined ? undefined : await openGatewayDatabase(url, options.maxConnections === undefined ? {} : { maxConnections: options.maxConnections });
  if (db === undefined) {
    const auditDir = path.join(root, AUDIT_DIR);
    const budgetDir = path.join(root, BUDGET_STATE_DIR);
    return {
      database: undefined,
      keys: () => fileKeyStore(path.join(root, KEY_FILE)),
      threads: () => fileThreadStore(root),
      auditLog: undefined,
      auditQuery: () => fileAuditQuery(auditDir),
      auditTail: (o) => readAuditTail({ dir: auditDir, ...o }),
      budgetLedger: (o) => openBudgetLedger({ dir: budgetDir, ...o }),
      where: { audit: auditDir, budgets: budgetDir },
      close: async () => undefined,
    };
  }
  return {
    database: db,
    keys: () => sqlKeyStore(db, 'the client_keys table of DATABASE_URL'),
    threads: (o) => sqlThreadStore(db, o?.holdMs === undefined ? {} : { holdMs: o.holdMs }),
    auditLog: (session, onWarning) => createSqlAuditLog({ db, sessionId: session, ...(onWarning ? { onWarning } : {}) }),
    auditQuery: () => sqlAuditQuery(db),
    auditTail: async (o) => (await readSqlAuditTail(db, o)).records,
    budgetLedger: (o) => openSqlBudgetLedger({ db, ...o }),
    where: { audit: 'in Postgres (DATABASE_URL, table audit_records)', budgets: 'Postgres (DATABASE_URL)' },
    close: () => db.close(),
  };
}

/** For a command that reads threads without a gateway (`kiwi threads list`, anneal): its own connection when DATABASE_URL is set, closed by `close`. */
export async function openThreadStore(root: string, env: Readonly<Record<string, string | undefined>>): Promise<{ store: ThreadStore; close(): Promise<void> }> {
  const state = await openStateBackends(root, env, { maxConnections: 1 });
  return { store: state.threads(), close: () => state.close() };
}
