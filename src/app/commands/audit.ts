import path from 'node:path';
import { formatAuditRecord, readAuditTail } from '../../audit/audit-reader.js';
import { readSqlAuditTail } from '../../audit/sql-audit-reader.js';
import type { AuditRecord } from '../../audit/audit-record.js';
import { databaseUrlOf, openGatewayDatabase } from '../../kernel/gateway-database.js';
import { UsageError, type CliContext } from '../../cli/io.js';
import { parseFlags } from '../../cli/parse-flags.js';
import { AUDIT_HELP } from './audit-help.js';
import { projectOptions } from '../../cli/project-options.js';

const USAGE = AUDIT_HELP.usage;

/** `kiwi audit tail`: the last records of the project's audit files, or with DATABASE_URL of the log the gateways sharing that Postgres write. */
export async function auditCommand(ctx: CliContext): Promise<number> {
  const { values, positionals } = parseFlags(ctx.argv, AUDIT_HELP);
  if (positionals[0] !== 'tail' || positionals.length > 1) throw new UsageError(`usage: ${USAGE}`);
  const limit = Number(values.n);
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) throw new UsageError(`-n must be a whole number from 1 to 10000, got ${values.n}`);
  const session = values.session ? { session: values.session } : {};
  let records: AuditRecord[];
  let where: string;
  const databaseUrl = databaseUrlOf(ctx.env);
  if (databaseUrl === undefined) {
    where = path.join(projectOptions(ctx, values).projectDir, '.ai', 'logs', 'audit');
    records = await readAuditTail({ dir: where, limit, ...session });
  } else {
    where = 'the Postgres of DATABASE_URL';
    const database = await openGatewayDatabase(databaseUrl, { maxConnections: 1 });
    try {
      records = (await readSqlAuditTail(database, { limit, ...session })).records;
    } finally {
      await database.close();
    }
  }
  if (records.length === 0) ctx.io.err(`kiwi: no audit records ${databaseUrl === undefined ? 'under' : 'in'} ${where}`);
  for (const r of records) ctx.io.out(values.json ? JSON.stringify(r) : formatAuditRecord(r));
  return 0;
}
