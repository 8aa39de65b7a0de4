import { readAuditTail, formatAuditRecord } from '../../audit/audit-reader.js';
import { validateChains } from '../../executor/chain.js';
import { LOCAL_CLIENT } from '../../clients/client-auth.js';
import { openProject } from '../../project/open-project.js';
import type { CallOutcome } from '../../proxy/tool-call.js';
import type { CliContext } from '../../cli/io.js';
import { parseFlags } from '../../cli/parse-flags.js';
import { DEMO_HELP } from './demo-help.js';
import { projectOptions } from '../../cli/project-options.js';

interface Step {
  say: string;
  tool: string;
  args: Record<string, unknown>;
}

const STEPS: Step[] = [
  { say: 'a subprocess tool (git, exact argv, no shell)', tool: 'git_status', args: {} },
  { say: 'a node script tool reading a file the policy allows', tool: 'read_file', args: { path: 'package.json', max_bytes: 240 } },
  { say: 'a Python script tool', tool: 'word_count', args: { path: 'README.md' } },
  { say: 'a Python script in a container without a network (isolation: restricted; refused, with the reason, where podman is missing)', tool: 'file_digest', args: { path: 'package.json' } },
  { say: 'a tool of an MCP server from npm (stdio, pooled)', tool: 'search_files', args: { path: '.', pattern: '*.md' } },
  { say: 'a path that escapes the project: denied', tool: 'read_file', args: { path: '%2e%2e/%2e%2e/etc/passwd' } },
  { say: 'an argument that smuggles an option: denied', tool: 'git_diff', args: { ref: '--output=/tmp/pwned' } },
  { say: 'an MCP tool the policy does not list: denied', tool: 'files.write_file', args: { path: 'x.txt', content: 'no' } },
];

const ONLINE_STEP: Step = { say: 'an HTTP API tool (needs the npm registry)', tool: 'npm_package_info', args: { package: 'undici' } };

/** `kiwi demo`: shows the permissioned tool proxy on the demo `.ai/`, then the audit trail it left. */
export async function demoCommand(ctx: CliContext): Promise<number> {
  const { values } = parseFlags(ctx.argv, DEMO_HELP);
  const project = await openProject(projectOptions(ctx, values));
  try {
    const { registry } = project;
    const broken = registry.errors.length + validateChains(registry.tools).length;
    ctx.io.out(`Kiwi Gateway demo — project ${project.root}`);
    ctx.io.out(`registry: ${registry.tools.size} tools, ${registry.directives.size} directives, ${registry.knowledge.size} knowledge entries (${broken} invalid); policy: ${project.policy.label}`);
    ctx.io.out(`session ${project.session}\n`);
    for (const step of values.online ? [...STEPS, ONLINE_STEP] : STEPS) {
      ctx.io.out(`▶ ${step.say}\n  kiwi run ${step.tool} --args '${JSON.stringify(step.args)}'`);
      const outcome = await project.proxy.call({ target: { tool: step.tool, args: step.args }, caller: { session: project.session, client: LOCAL_CLIENT, source: 'cli' }, ...(ctx.signal ? { run: { signal: ctx.signal } } : {}) });
      ctx.io.out(indent(describe(outcome)));
    }
    await project.audit.flush();
    ctx.io.out(`audit log (kiwi audit tail --session ${project.session}):`);
    const records = await readAuditTail({ dir: project.auditDir, limit: 50, session: project.session });
    for (const r of records) ctx.io.out(`  ${formatAuditRecord(r)}`);
    if (!values.online) ctx.io.out('\n(run `kiwi demo --online` to include the HTTP API tool against the npm registry)');
    return 0;
  } finally {
    await project.close();
  }
}

function describe(outcome: CallOutcome): string {
  const ms = `${outcome.durationMs.toFixed(0)} ms`;
  if (outcome.status === 'denied') return `DENIED (${ms}): ${outcome.reason}`;
  if (outcome.status === 'error') return `ERROR ${outcome.error.code} (${ms}): ${outcome.error.message}`;
  const text = outcome.result.text.trim();
  const shown = text.length > 400 ? `${text.slice(0, 400)}…` : text;
  return `${outcome.result.isError ? 'FAILED' : 'ok'} (${ms}):\n${shown}`;
}

function indent(text: string): string {
  return `${text.split('\n').map((l) => `  ${l}`).join('\n')}\n`;
}
