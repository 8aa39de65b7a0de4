import { validateChains } from '../../executor/chain.js';
import { hookDirectiveProblems, templateProblems } from '../../project/reference-checks.js';
import { openProject, type Project } from '../../project/open-project.js';
import type { Tool } from '../../registry/types.js';
import { UsageError, type CliContext } from '../../cli/io.js';
import { parseFlags } from '../../cli/parse-flags.js';
import { TOOLS_HELP } from './tools-help.js';
import { projectOptions } from '../../cli/project-options.js';
import { importTools } from './tools-import.js';

const USAGE = TOOLS_HELP.usage;

export async function toolsCommand(ctx: CliContext): Promise<number> {
  const { values, positionals } = parseFlags(ctx.argv, TOOLS_HELP);
  const [sub, ...rest] = positionals;
  const project = await openProject(projectOptions(ctx, values));
  try {
    switch (sub) {
      case 'list':
        return list(ctx, project, values.json === true);
      case 'show':
        if (rest.length !== 1) throw new UsageError(`give one tool id; usage: ${USAGE}`);
        return await show(ctx, project, rest[0] as string, values.json === true);
      case 'validate':
        return validate(ctx, project, values.json === true);
      case 'import':
        return await importTools(ctx, project, rest, {
          ...(typeof values.name === 'string' ? { name: values.name } : {}),
          ...(typeof values.server === 'string' ? { server: values.server } : {}),
          sign: values.sign === true,
        });
      default:
        throw new UsageError(`unknown subcommand ${sub ? `\`${sub}\`` : '(none)'}; usage: ${USAGE}`);
    }
  } finally {
    await project.close();
  }
}

function list(ctx: CliContext, project: Project, json: boolean): number {
  const tools = [...project.registry.tools.values()].sort((a, b) => a.id.localeCompare(b.id));
  if (json) {
    ctx.io.out(JSON.stringify(tools.map(summary), null, 2));
    return 0;
  }
  const width = Math.max(8, ...tools.map((t) => t.id.length));
  for (const t of tools) {
    ctx.io.out(`${t.id.padEnd(width)}  ${t.type.padEnd(10)}  ${(t.executor ?? '-').padEnd(14)}  ${t.source.tier.padEnd(7)}  ${t.description}`);
  }
  ctx.io.err(`${tools.length} tools; ${project.registry.errors.length} invalid items (run \`kiwi tools validate\`)`);
  return 0;
}

async function show(ctx: CliContext, project: Project, id: string, json: boolean): Promise<number> {
  const tool = project.registry.tools.get(id);
  if (!tool) throw new UsageError(`no tool \`${id}\`; run \`kiwi tools list\``);
  const remote = tool.type === 'mcp_server' ? await remoteTools(project, tool) : undefined;
  if (json) {
    ctx.io.out(JSON.stringify({ ...tool, ...(remote ? { mcp_tools: remote } : {}) }, null, 2));
    return 0;
  }
  ctx.io.out(`${tool.id}  (${tool.type}, version ${tool.version}, ${tool.source.tier} tier)`);
  ctx.io.out(`  ${tool.description}`);
  ctx.io.out(`  file: ${tool.source.path}`);
  ctx.io.out(`  executor: ${tool.executor ?? '(primitive)'}; ${tool.mutatesState ? 'may change state' : 'read-only'}`);
  for (const p of tool.parameters) {
    const extra = [p.required ? 'required' : 'optional', p.default !== undefined ? `default ${JSON.stringify(p.default)}` : '', p.format ?? ''].filter(Boolean).join(', ');
    ctx.io.out(`  - ${p.name}: ${p.type} (${extra})${p.description ? ` — ${p.description}` : ''}`);
  }
  for (const r of remote ?? []) ctx.io.out(`  ${r.qualifiedName}: ${firstSentence(r.description)}`);
  return 0;
}

async function remoteTools(project: Project, tool: Tool) {
  const outcome = await project.proxy.listMcpTools(tool.id);
  if (outcome.status !== 'ok') throw new UsageError(`cannot list the tools of MCP server ${tool.id}: ${outcome.reason}`);
  return outcome.tools;
}

function validate(ctx: CliContext, project: Project, json: boolean): number {
  const { registry } = project;
  const problems = [
    ...registry.errors.map((e) => e.message),
    ...validateChains(registry.tools).map((p) => p.message),
    ...templateProblems(registry.tools.values()),
    ...hookDirectiveProblems(project.policy.hooks ?? [], registry.directives),
  ];
  // A warning is a part of a loaded item the gateway does not honour: shown, never a failure.
  const warnings = registry.warnings.map((w) => w.message);
  if (json) ctx.io.out(JSON.stringify({ ok: problems.length === 0, problems, warnings }, null, 2));
  else for (const p of [...problems, ...warnings.map((w) => `warning: ${w}`)]) ctx.io.out(p);
  const counts = `${registry.tools.size} tools, ${registry.directives.size} directives, ${registry.knowledge.size} knowledge entries`;
  if (problems.length > 0) {
    ctx.io.err(`kiwi: ${problems.length} problem(s); ${counts} loaded`);
    return 1;
  }
  ctx.io.err(`ok: ${counts}, all valid`);
  return 0;
}

function firstSentence(text: string): string {
  const line = text.split('\n')[0] ?? '';
  const end = line.search(/\.\s/);
  return end > 0 ? line.slice(0, end + 1) : line;
}

function summary(t: Tool) {
  return { id: t.id, type: t.type, executor: t.executor, tier: t.source.tier, description: t.description, mutates_state: t.mutatesState };
}
