import { describeError } from '../errors.js';
import { HelpRequested, UsageError, type CliContext } from '../cli/io.js';
import { KIWI_VERSION } from '../version.js';

const HELP = `kiwi — intent-resolving gateway between LLM agents and their tools

Usage:
  kiwi init [DIR]                      make a working .ai/ here (or in DIR): config, a default-deny policy, the script runtimes, a .gitignore; never overwrites
  kiwi serve [--host H] [--port P]     the gateway: OpenAI/Anthropic-compatible proxy that runs [TOOL: …] intents, and /mcp (what \`npm start\` runs)
  kiwi keys create NAME|list|revoke ID   client API keys (stored hashed); once one exists, every request needs a key
  kiwi tools list|show TOOL|validate   the .ai/ registry (project tier, then ~/.ai, then the registry tier)
  kiwi registry push [PATH...]|pin ID[@VERSION]|unpin ID|pull ID[@VERSION] [--force]|list|show ID   the registry tier in the database: every version kept; a project runs the versions it pins
  kiwi run TOOL --args JSON            run one tool through the permissioned tool proxy
  kiwi directives run NAME [--input K=V]... [--model M]   run a directive as a thread here: its tools only, its limits, the model its tier maps to
  kiwi directives list                  the directives, each version that runs and the older ones beside it
  kiwi directives anneal NAME [--thread ID] [--model M]   a new signed version beside the old, written by the model from its failed threads
  kiwi env save NAME --directive D [--tool ID]... [--knowledge ID]... | list | show NAME | run NAME [--input K=V]...   environments (.ai/environments/): a directive saved with its inputs, tools, knowledge and model tier, pinned; run starts a thread from one
  kiwi pipelines list|run NAME [--input K=V]...|runs|show RUN|resume RUN   directives run in sequence or side by side (.ai/pipelines/), each stage a thread handed the earlier stages' results
  kiwi threads list|show ID|follow ID|resume ID|cancel ID  the directive threads (.ai/threads/): their transcripts, one followed live, one that stopped resumed, one a gateway runs cancelled
  kiwi sign FILE... | kiwi verify FILE...   write / check the kiwi-mcp:validated signature line
  kiwi audit tail [-n N] [--session ID]     the latest audited calls, allowed and denied
  kiwi checkpoints list|diff ID [--stat] [--parent]|restore ID [--dry-run]   git checkpoints taken before state-changing calls; restore puts files back (and can be undone)
  kiwi index                           embed every valid tool into .ai/vectors (LanceDB; incremental)
  kiwi resolve "INTENT"                the call an intent resolves to, with candidates and timings (runs nothing)
  kiwi mcp [--allow-empty]             serve the meta-tools (search, load, execute, help, resolve) as an MCP server on stdio (needs .ai/ in the project)
  kiwi model train|show                rebuild the resolver's learned confidence from ../shared/datasets (models/resolver/model.json), or show it
  kiwi predictor train|show            learn which tool follows which from the audit log (.ai/state/predictor.json), or show it
  kiwi chat "MESSAGE" [--model M] [--url URL]   send one message to a running gateway; prints the reply and each step (intent, call, result)
  kiwi stats [--url URL] [--key KEY]   prefetch counters (hits, misses, hit rate, time saved) of a running gateway; the key defaults to KIWI_API_KEY
  kiwi executions list|show ID|events ID|cancel ID   the kernel's executions on a running gateway (v0 API)
  kiwi approvals list|grant STEP|deny STEP [--reason R]   tool calls that wait for a person, and the answer
  kiwi runner --kernel URL [--key K] [--runner-id ID] [--tools GLOB,…] [--concurrency N]   run a kernel's remote tool calls here, through this project's tool proxy
  kiwi containers build|check          the image that sandboxed and restricted tools run in (podman; built from this machine's files), or whether containers run here
  kiwi demo                            a guided tour of the permissioned tool proxy on the demo .ai/ (no server)

Options: --project DIR (default: KIWI_PROJECT or the current folder), --json; kiwi --version.
Environment: KIWI_USER_DIR moves the user tier (default: your home folder).`;

type Command = (ctx: CliContext) => Promise<number>;
// Each command's module is imported when it runs: `kiwi --help`, `kiwi chat` or `kiwi keys` do not
// load LanceDB, PGlite and the models that `kiwi serve` needs.
const COMMANDS: Record<string, () => Promise<Command>> = {
  init: async () => (await import('../cli/commands/init.js')).initCommand,
  tools: async () => (await import('../cli/commands/tools.js')).toolsCommand,
  run: async () => (await import('../cli/commands/run.js')).runCommand,
  directives: async () => (await import('./commands/directives.js')).directivesCommand,
  threads: async () => (await import('./commands/threads.js')).threadsCommand,
  env: async () => (await import('./commands/env.js')).envCommand,
  pipelines: async () => (await import('./commands/pipelines.js')).pipelinesCommand,
  sign: async () => (await import('../cli/commands/sign.js')).signCommand,
  verify: async () => (await import('../cli/commands/sign.js')).verifyCommand,
  audit: async () => (await import('../cli/commands/audit.js')).auditCommand,
  checkpoints: async () => (await import('../cli/commands/checkpoints.js')).checkpointsCommand,
  demo: async () => (await import('../cli/commands/demo.js')).demoCommand,
  index: async () => (await import('../cli/commands/index-tools.js')).indexCommand,
  resolve: async () => (await import('../cli/commands/resolve.js')).resolveCommand,
  mcp: async () => (await import('../cli/commands/mcp.js')).mcpCommand,
  serve: async () => (await import('./commands/serve.js')).serveCommand,
  predictor: async () => (await import('../cli/commands/predictor.js')).predictorCommand,
  model: async () => (await import('../cli/commands/model.js')).modelCommand,
  stats: async () => (await import('../cli/commands/stats.js')).statsCommand,
  chat: async () => (await import('../cli/commands/chat.js')).chatCommand,
  executions: async () => (await import('../cli/commands/executions.js')).executionsCommand,
  approvals: async () => (await import('../cli/commands/approvals.js')).approvalsCommand,
  runner: async () => (await import('../cli/commands/runner.js')).runnerCommand,
  keys: async () => (await import('../cli/commands/keys.js')).keysCommand,
  registry: async () => (await import('../cli/commands/registry.js')).registryCommand,
  containers: async () => (await import('../cli/commands/containers.js')).containersCommand,
};

/** Every command `kiwi` knows. */
export const COMMAND_NAMES: readonly string[] = Object.keys(COMMANDS);

/** Runs one CLI command and returns its exit code; every failure is one line on stderr. */
export async function runCli(argv: string[], ctx: Omit<CliContext, 'argv'>): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    ctx.io.out(HELP);
    return name ? 0 : 2;
  }
  if (name === '--version' || name === '-V') {
    ctx.io.out(`kiwi ${KIWI_VERSION}`);
    return 0;
  }
  const load = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!load) {
    ctx.io.err(`kiwi: unknown command \`${name}\`; run \`kiwi --help\` to see the commands`);
    return 2;
  }
  try {
    const command = await load();
    return await command({ ...ctx, argv: rest });
  } catch (error) {
    if (error instanceof HelpRequested) {
      ctx.io.out(error.message);
      return 0;
    }
    if (error instanceof UsageError) {
      ctx.io.err(`kiwi ${name}: ${error.message}`);
      return 2;
    }
    ctx.io.err(`kiwi ${name}: ${describeError(error).split('\n')[0]}`);
    return 1;
  }
}
