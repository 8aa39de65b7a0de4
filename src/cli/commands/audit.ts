import path from 'node:path';
import { formatAuditRecord, readAuditTail } from '../../audit/audit-reader.js';
import { UsageError, type CliContext } from '../io.js';
import { parseFlags } from '../parse-flags.js';
import { projectOptions } from '../project-options.js';

const USAGE = 'kiwi audit tail [-n N] [--session ID] [--json] [--project DIR]';

export async function auditCommand(ctx: CliContext): Promise<number> {
  const { values, positionals } = parseFlags(
    ctx.argv,
    { n: { type: 'string', short: 'n', default: '20' }, session: { type: 'string' }, json: { type: 'boolean' }, project: { type: 'string' } },
    USAGE,
  );
  if (positionals[0] !== 'tail' || positionals.length > 1) throw new UsageError(`usage: ${USAGE}`);
  const limit = Number(values.n);
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) throw new UsageError(`-n must be a whole number from 1 to 10000, got ${values.n}`);
  const dir = path.join(projectOptions(ctx, values).projectDir, '.ai', 'logs', 'audit');
  const records = await readAuditTail({ dir, limit, ...(values.session ? { session: values.session } : {}) });
  if (records.length === 0) ctx.io.err(`kiwi: no audit records under ${dir}`);
  for (const r of records) ctx.io.out(values.json ? JSON.stringify(r) : formatAuditRecord(r));
  return 0;
}
