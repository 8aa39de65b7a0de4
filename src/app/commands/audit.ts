import { formatAuditRecord } from '../../audit/audit-reader.js';
import type { AuditRecord } from '../../audit/audit-record.js';
import { databaseUrlOf } from '../../kernel/gateway-database.js';
import { openStateBackends } from '../state-backends.js';
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
  // With DATABASE_URL the log is the shared table, read from anywhere; without, a project's files.
  const { projectDir } = projectOptions(ctx, values, { needsAi: databaseUrlOf(ctx.env) === undefined });
  const state = await openStateBackends(projectDir, ctx.env, { maxConnections: 1 });
  let records: AuditRecord[];
  try {
    records = await state.auditTail({ limit, ...session });
  } finally {
    await state.close();
  }
  if (records.length === 0) ctx.io.err(`kiwi: no audit records ${state.database === undefined ? `under ${state.where.audit}` : 'in the Postgres of DATABASE_URL'}`);
  for (const r of records) ctx.io.out(values.json ? JSON.stringify(r) : formatAuditRecord(r));
  return 0;
}
