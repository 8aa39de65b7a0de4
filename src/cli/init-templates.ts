/**
 * The files `kiwi init` writes into a new `.ai/`. Kept as constants (not files shipped beside the
 * code) so they travel with the build wherever the CLI runs; test/cli/init.test.ts loads every one
 * of them through the same loaders the gateway uses, so a template that stops parsing fails there.
 *
 * Runtimes are data, not code (DESIGN §3: only `subprocess` and `http_client` are built in), so
 * init writes them as manifests the user can read and change (a venv's python, another node).
 */

export interface InitFile {
  /** Path inside the project, with `/` separators. */
  path: string;
  /** One line on what it is for, printed next to it. */
  about: string;
  text: string;
}

export const GATEWAY_YAML = `# Kiwi Gateway settings (written by \`kiwi init\`). Every field is optional; the values below
# are the defaults, so deleting a line changes nothing. Environment variables win over this file:
#   KIWI_HOST, KIWI_PORT                      where to listen
#   OPENAI_API_KEY (+ OPENAI_BASE_URL)        adds upstream "openai" for every model
#   ANTHROPIC_API_KEY (+ ANTHROPIC_BASE_URL)  adds upstream "anthropic" for claude-*
#   KIWI_UPSTREAM_URL                         adds upstream "local": an OpenAI-compatible server
#                                             that needs no key (llama.cpp, Ollama, vLLM…)

host: 127.0.0.1      # 0.0.0.0 listens on every interface: then client keys are required
port: 8787           # (\`kiwi keys create NAME\`)

# Host names clients may put in the URL; any other is refused 403 (DNS rebinding). On a network,
# add the name or address your clients use.
allowed_hosts: [localhost, 127.0.0.1, "[::1]"]

# Browser pages (exact origins, e.g. "http://localhost:3000") that may call the gateway.
allowed_origins: []

# Which model a request goes to: the first upstream whose \`models\` (exact ids or globs) match.
# Keys never go here: \`api_key_env\` names the environment variable that holds one. The offline
# demo model "kiwi-demo" is always there, so the gateway answers before you configure any.
upstreams: []
# upstreams:
#   - { name: openai, kind: openai, api_key_env: OPENAI_API_KEY, models: ["gpt-*", "o3*", "o4*"] }
#   - { name: anthropic, kind: anthropic, api_key_env: ANTHROPIC_API_KEY, models: ["claude-*"] }
#   - { name: ollama, kind: openai, base_url: "http://127.0.0.1:11434/v1", models: ["llama3.1:8b"] }

# How many likely tool ids (one line each) the agent sees per request; 0 turns the menu off.
tool_menu: 20

# Per client request, across every turn of the agent loop.
limits:
  max_turns: 8               # upstream requests, the first included
  max_tool_calls: 16         # intents, whether they ran, were denied or unresolved
  max_duration_ms: 300000    # wall time, upstream and tools included
  max_result_chars: 16000    # a longer tool result is cut, with a note, before the agent sees it
  max_repeats: 3             # the same call this many times ends the request

# While the agent writes, guess its next intent and run the search ahead; read-only tools
# (mutates_state: false) may even run ahead, and their result is used only for the exact same call.
prefetch:
  enabled: true
  ttl_ms: 10000
  speculate: true

# In a git work tree, the work tree is committed to refs/kiwi/checkpoints/main before each call
# of a tool that may change state; \`kiwi checkpoints list|diff|restore\`. Your branch is untouched.
checkpoints:
  enabled: true
`;

export const POLICY_YAML = `# What tools may do (written by \`kiwi init\`). Default deny: a tool, path or program not listed
# here is refused, and a field left out allows nothing. Every call, allowed or denied, is logged
# to .ai/logs/audit/ (\`kiwi audit tail\`).
version: 1

# Tool ids (globs allowed) that may run. Add yours, e.g. [word_count, "git_*"].
tools: []

# Paths that tool arguments declared \`format: path\` may name: globs relative to the project.
# \`**\` never matches names that start with a dot (.env, .git/): write the dot to allow them.
filesystem:
  read: []            # e.g. ["**"] or ["src/**", "docs/**"]
  write: []           # e.g. ["out/**"]; in the sandbox everything else is read-only

# Programs a tool may start: the exact argv[0], never a shell. The runtimes in
# .ai/tools/runtimes/ start these; a tool still runs only when it is listed in \`tools\`.
commands:
  - { executable: python3 }
  - { executable: node }
  - { executable: bash }

# More, when you need it:
# mcp:
#   tools: ["files.read_text_file"]            # server.tool globs of MCP servers' tools
# network:
#   allow_private: ["10.0.0.5"]                # private addresses API tools may reach
# rate_limits:
#   per_tool: { "*": { max: 60, per_ms: 60000 } }
#   per_client: { max: 600, per_ms: 60000 }
# hooks:                                      # CEL conditions, checked around each call
#   - when: tool.id == "my_tool" and arguments.text.contains("password")
#     deny: no passwords in my_tool's input
`;

/** A runtime that runs a script tool's file with `command`, the call's arguments as JSON on stdin. */
function runtime(id: string, command: string, what: string): string {
  return `# Runs a script tool with ${command}: the script's path (next to its manifest) as the only
# argument, the call's arguments as one JSON object on stdin; what it prints is the result.
# Point \`command\` at another interpreter (a virtualenv's python, say) if you need one; then list
# that exact path under \`commands\` in .ai/config/policy.yaml.
tool_id: ${id}
tool_type: runtime
executor: subprocess
version: "1.0.0"
description: "Run ${what} scripts; arguments arrive as one JSON object on stdin"
config:
  command: ${command}
  args: ["{script}"]
  stdin: "{args_json}"
`;
}

/** `.ai/.gitignore`: what the gateway writes at run time (paths relative to `.ai/`). */
export const GITIGNORE = `# Written by Kiwi Gateway at run time, not by you (\`kiwi init\` made this file):
# state/    embedded database, client keys (hashed), budgets  (\`kiwi keys\` keeps keys here)
# logs/     the audit log
# vectors/  the search index, rebuilt from tools/ when missing
# threads/  directive thread transcripts
# tools/.registry/  the registry tier's items as this project runs them (\`kiwi registry\`)
/state/
/logs/
/vectors/
/threads/
/tools/.registry/
`;

export const INIT_FILES: readonly InitFile[] = [
  { path: '.ai/config/gateway.yaml', about: 'where to listen, which models, limits (all defaults, commented)', text: GATEWAY_YAML },
  { path: '.ai/config/policy.yaml', about: 'default deny: no tool runs until you list it here', text: POLICY_YAML },
  { path: '.ai/tools/runtimes/python_runtime.yaml', about: 'runs script tools with python3', text: runtime('python_runtime', 'python3', 'python') },
  { path: '.ai/tools/runtimes/node_runtime.yaml', about: 'runs script tools with node', text: runtime('node_runtime', 'node', 'node') },
  { path: '.ai/tools/runtimes/bash_runtime.yaml', about: 'runs script tools with bash', text: runtime('bash_runtime', 'bash', 'bash') },
  { path: '.ai/.gitignore', about: 'keeps generated state (state/, logs/, vectors/, threads/) out of git', text: GITIGNORE },
];
