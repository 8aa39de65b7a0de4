import type { CommandHelp } from '../cli/command-help.js';
import type { CliContext } from '../cli/io.js';
import { APPROVALS_HELP } from './commands/approvals-help.js';
import { AUDIT_HELP } from './commands/audit-help.js';
import { CHAT_HELP } from './commands/chat-help.js';
import { CHECKPOINTS_HELP } from './commands/checkpoints-help.js';
import { CONTAINERS_HELP } from './commands/containers-help.js';
import { DEMO_HELP } from './commands/demo-help.js';
import { EXECUTIONS_HELP } from './commands/executions-help.js';
import { INDEX_HELP } from './commands/index-tools-help.js';
import { INIT_HELP } from './commands/init-help.js';
import { KEYS_HELP } from './commands/keys-help.js';
import { MCP_HELP } from './commands/mcp-help.js';
import { MODEL_HELP } from './commands/model-help.js';
import { PREDICTOR_HELP } from './commands/predictor-help.js';
import { REGISTRY_HELP } from './commands/registry-help.js';
import { RESOLVE_HELP } from './commands/resolve-help.js';
import { RUN_HELP } from './commands/run-help.js';
import { RUNNER_HELP } from './commands/runner-help.js';
import { SIGN_HELP, VERIFY_HELP } from './commands/sign-help.js';
import { STATS_HELP } from './commands/stats-help.js';
import { TOOLS_HELP } from './commands/tools-help.js';
import { DIRECTIVES_HELP } from './commands/directives-help.js';
import { ENV_HELP } from './commands/env-help.js';
import { PIPELINES_HELP } from './commands/pipelines-help.js';
import { SERVE_HELP } from './commands/serve-help.js';
import { THREADS_HELP } from './commands/threads-help.js';

export type Command = (ctx: CliContext) => Promise<number>;

/** A command: its help (light, always loaded) and its code, imported when it runs. */
export interface CliCommand {
  readonly help: CommandHelp;
  readonly load: () => Promise<Command>;
}

export interface CommandGroup {
  readonly title: string;
  readonly commands: readonly CliCommand[];
}

/**
 * Every command of `kiwi`, in the groups `kiwi --help` shows. The code is imported when the command
 * runs: `kiwi --help`, `kiwi help serve`, `kiwi chat` or `kiwi keys` do not load LanceDB, PGlite
 * and the models that `kiwi serve` needs.
 */
export const COMMAND_GROUPS: readonly CommandGroup[] = [
  {
    title: 'PROJECT COMMANDS',
    commands: [
      { help: INIT_HELP, load: async () => (await import('./commands/init.js')).initCommand },
      { help: TOOLS_HELP, load: async () => (await import('./commands/tools.js')).toolsCommand },
      { help: RUN_HELP, load: async () => (await import('./commands/run.js')).runCommand },
      { help: RESOLVE_HELP, load: async () => (await import('./commands/resolve.js')).resolveCommand },
      { help: INDEX_HELP, load: async () => (await import('./commands/index-tools.js')).indexCommand },
      { help: REGISTRY_HELP, load: async () => (await import('./commands/registry.js')).registryCommand },
      { help: SIGN_HELP, load: async () => (await import('./commands/sign.js')).signCommand },
      { help: VERIFY_HELP, load: async () => (await import('./commands/sign.js')).verifyCommand },
      { help: AUDIT_HELP, load: async () => (await import('./commands/audit.js')).auditCommand },
      { help: CHECKPOINTS_HELP, load: async () => (await import('./commands/checkpoints.js')).checkpointsCommand },
      { help: DEMO_HELP, load: async () => (await import('./commands/demo.js')).demoCommand },
    ],
  },
  {
    title: 'GATEWAY COMMANDS',
    commands: [
      { help: SERVE_HELP, load: async () => (await import('./commands/serve.js')).serveCommand },
      { help: MCP_HELP, load: async () => (await import('./commands/mcp.js')).mcpCommand },
      { help: KEYS_HELP, load: async () => (await import('./commands/keys.js')).keysCommand },
      { help: CHAT_HELP, load: async () => (await import('./commands/chat.js')).chatCommand },
      { help: STATS_HELP, load: async () => (await import('./commands/stats.js')).statsCommand },
      { help: CONTAINERS_HELP, load: async () => (await import('./commands/containers.js')).containersCommand },
    ],
  },
  {
    title: 'AGENT COMMANDS',
    commands: [
      { help: DIRECTIVES_HELP, load: async () => (await import('./commands/directives.js')).directivesCommand },
      { help: ENV_HELP, load: async () => (await import('./commands/env.js')).envCommand },
      { help: PIPELINES_HELP, load: async () => (await import('./commands/pipelines.js')).pipelinesCommand },
      { help: THREADS_HELP, load: async () => (await import('./commands/threads.js')).threadsCommand },
    ],
  },
  {
    title: 'KERNEL COMMANDS',
    commands: [
      { help: EXECUTIONS_HELP, load: async () => (await import('./commands/executions.js')).executionsCommand },
      { help: APPROVALS_HELP, load: async () => (await import('./commands/approvals.js')).approvalsCommand },
      { help: RUNNER_HELP, load: async () => (await import('./commands/runner.js')).runnerCommand },
    ],
  },
  {
    title: 'LEARNING COMMANDS',
    commands: [
      { help: PREDICTOR_HELP, load: async () => (await import('./commands/predictor.js')).predictorCommand },
      { help: MODEL_HELP, load: async () => (await import('./commands/model.js')).modelCommand },
    ],
  },
];
