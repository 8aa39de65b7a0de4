/**
 * The kernel's database, whichever Postgres it is: embedded PGlite (pglite-db.ts) or a server
 * (postgres-db.ts). One schema and one set of migrations run on both; callers write plain
 * parameterised SQL ($1, $2…) and never build it from values.
 */

export type SqlValue = string | number | boolean | null;

export interface SqlQueryable {
  /** Rows as plain objects keyed by column name. */
  query<Row extends Record<string, unknown>>(sql: string, params?: readonly SqlValue[]): Promise<Row[]>;
}

export interface SqlDb extends SqlQueryable {
  readonly kind: 'pglite' | 'postgres';
  /** Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: SqlQueryable) => Promise<T>): Promise<T>;
  /** Statements with no parameters and no result, several at once (migrations). */
  exec(sql: string): Promise<void>;
  close(): Promise<void>;
}
