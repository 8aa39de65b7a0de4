import { directiveContext } from '../../policy/directive-permissions.js';
import type { PermissionContext } from '../../policy/permission-context.js';
import { LOCAL_CLIENT } from '../../clients/client-auth.js';
import { openProject, type Project } from '../../project/open-project.js';
import { issuesOfItem } from '../../registry/invalid-items.js';
import { UsageError, type CliContext } from '../../cli/io.js';
import { parseFlags } from '../../cli/parse-flags.js';
import { RUN_HELP } from './run-help.js';
import { projectOptions } from '../../cli/project-options.js';

const USAGE = RUN_HELP.usage;

/** Exit codes: 0 ran, 1 the tool failed or errored, 3 the policy denied it. */
export async function runCommand(ctx: CliContext): Promise<number> {
  const { values, positionals } = parseFlags(ctx.argv, RUN_HELP);
  const [tool, ...extra] = positionals;
  if (!tool || extra.length > 0) throw new UsageError(`give exactly one tool id; usage: ${USAGE}`);
  const args = parseJsonArgs(values.args);
  const project = await openProject(projectOptions(ctx, values));
  try {
    const context = values.directive ? directiveCallContext(project, values.directive) : undefined;
    const outcome = await project.proxy.call({ target: { tool, args }, caller: { session: project.session, client: LOCAL_CLIENT, source: 'cli', ...(context ? { context } : {}) }, ...(ctx.signal ? { run: { signal: ctx.signal } } : {}) });
    if (values.json) ctx.io.out(JSON.stringify(outcome, null, 2));
    else if (outcome.status === 'ok') {
      ctx.io.out(outcome.result.text.replace(/\n$/, ''));
      if (outcome.result.isError) ctx.io.err(`kiwi: ${tool} reported an error${outcome.result.exitCode != null ? ` (exit code ${outcome.result.exitCode})` : ''}`);
    } else if (outcome.status === 'denied') ctx.io.err(`kiwi: denied: ${outcome.reason}`);
    else if (outcome.error.code === 'TOOL_NOT_FOUND' && issuesOfItem(project.registry.errors, tool).length > 0) {
      // Not "no tool": its file is there, and says what is wrong with it.
      ctx.io.err(`kiwi: ${tool} is not loaded, its file is invalid; fix it and run again:`);
      for (const issue of issuesOfItem(project.registry.errors, tool)) ctx.io.err(`  ${issue.message}`);
    } else ctx.io.err(`kiwi: ${outcome.error.code}: ${outcome.error.message}`);
    if (outcome.stuck) ctx.io.err(`kiwi: warning: ${tool} was called with the same arguments several times in this session`);
    if (outcome.status === 'denied') return 3;
    return outcome.status === 'ok' && !outcome.result.isError ? 0 : 1;
  } finally {
    await project.close();
  }
}

/** Runs the call with a directive's `<permissions>` under the policy: they can narrow it, never widen it. */
function directiveCallContext(project: Project, name: string): PermissionContext {
  const directive = project.registry.directives.get(name);
  if (!directive) throw new UsageError(`no directive \`${name}\`; the directives are ${[...project.registry.directives.keys()].join(', ') || '(none)'}`);
  return directiveContext(project.policy, directive.name, directive.permissions).context;
}

function parseJsonArgs(text: string | undefined): unknown {
  if (text === undefined) return {};
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--args is not valid JSON (${error instanceof Error ? error.message : error}); write e.g. --args '{"path": "README.md"}'`);
  }
}
