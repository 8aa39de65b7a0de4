/** YAML tool manifests (`.ai/tools/**.yaml`, legacy `.ai/scripts/`) → `Tool`. */
import { z } from 'zod';
import { verifySignature } from './signature.js';
import { findSignature } from './markdown-parts.js';
import { checkToolName } from './tool-name.js';
import { parseRequirement } from './python-requirement.js';
import { parseParameters } from './tool-parameters.js';
import { ISOLATION_LEVELS, PRIMITIVES, TOOL_TYPES, type IsolationLevel, type Tier, type Tool, type ToolType } from './types.js';
import { fail, makeIssue, type FileLabel, type IssueInput, type ParseResult } from './validation-error.js';
import { parseYamlSource, type YamlSource } from './yaml-source.js';
import { oneOf, zodIssuesToInputs, type FieldHints } from './zod-issues.js';

const toolId = z.string().superRefine((value, ctx) => {
  const check = checkToolName(value);
  if (!check.ok) ctx.addIssue({ code: 'custom', message: check.reason });
});

/**
 * Kiwi's shorthand tool types: a script and the runtime that runs it. The runtime is the default
 * executor; a manifest that names one keeps its own.
 */
const TYPE_ALIASES: Readonly<Record<string, { type: ToolType; executor: string }>> = {
  python: { type: 'script', executor: 'python_runtime' },
  bash: { type: 'script', executor: 'bash_runtime' },
  node: { type: 'script', executor: 'node_runtime' },
};

/** Folded into `requires` by a mis-indented manifest (deploy_staging.yaml); named so the message can say how to fix it. */
const REQUIRES_CHILDREN = ['commands', 'environment'];

/**
 * The manifest as written. Strict: an unknown key is an error. `executor_id` is the name Kiwi MCP
 * used for `executor` (shared/compat/kiwi-mcp/README.md). `requires`, `outputs` and `capabilities`
 * are Kiwi's descriptive keys: kept on the Tool and shown by `load`, never acted on.
 */
export const toolManifestSchema = z.strictObject({
  tool_id: toolId,
  tool_type: oneOf('tool type', TOOL_TYPES),
  // null: Kiwi writes `executor: null` for knowledge, which runs nothing.
  executor: toolId.nullable().optional(),
  executor_id: toolId.nullable().optional(),
  version: z.string().min(1).optional(),
  description: z.string().optional(),
  mutates_state: z.boolean().optional(),
  requires_approval: z.boolean().optional(),
  config: z.record(z.string(), z.unknown()).optional(),
  // Checked by parseParameters, which accepts two shapes.
  parameters: z.unknown().optional(),
  tags: z.array(z.string()).optional(),
  examples: z.array(z.string()).optional(),
  requires: z.union([z.array(z.string()), z.record(z.string(), z.unknown())]).nullable().optional(),
  outputs: z.record(z.string(), z.unknown()).optional(),
  capabilities: z.array(z.string()).optional(),
  // Kiwi's script manifests (`tool.yaml` beside the script) write it at the top level; it joins config.
  entrypoint: z.string().min(1).optional(),
  isolation: oneOf('known isolation level', ISOLATION_LEVELS).optional(),
});

export type ToolManifest = z.infer<typeof toolManifestSchema>;

export const TOOL_MANIFEST_KEYS = Object.keys(toolManifestSchema.shape);

const HINTS: FieldHints = {
  tool_id: 'a name like weather_forecast (A-Z, a-z, 0-9, "_", "." and "-")',
  tool_type: `one of ${TOOL_TYPES.join(', ')} (or Kiwi's ${Object.keys(TYPE_ALIASES).join(', ')})`,
  executor: 'the id of the tool that runs this one, e.g. http_client or python_runtime',
  executor_id: 'the id of the tool that runs this one, e.g. http_client or python_runtime',
  version: 'a quoted string like "1.0.0"',
  description: 'a string that says what the tool does',
  mutates_state: 'true or false (no quotes)',
  requires_approval: 'true or false (no quotes)',
  config: 'a mapping of settings, e.g. { method: GET }',
  tags: 'a list of strings, e.g. [weather, forecast]',
  examples: 'a list of strings',
  requires: 'a list of what the tool needs, e.g. [spawn.thread], or a mapping like { commands: [kubectl] }',
  outputs: 'a JSON Schema of the result, e.g. { type: object, properties: {...} }',
  capabilities: 'a list of strings, e.g. [spawn, stdio]',
  entrypoint: 'the script file beside the manifest, e.g. main.py',
  isolation: `one of ${ISOLATION_LEVELS.join(', ')} (no quotes)`,
};

/** Parses and validates one manifest. Never throws for bad input: every problem is an issue. */
export function parseToolManifest(text: string, label: FileLabel, tier: Tier): ParseResult<Tool> {
  const toIssue = (input: IssueInput) => makeIssue('tool', label, input);
  const yaml = parseYamlSource(text);
  if (!yaml.ok) return fail(yaml.errors.map(toIssue));
  const source = yaml.value;
  const data = source.data;
  if (data === null || data === undefined) {
    return fail([toIssue({ text: 'the manifest is empty; write at least tool_id, tool_type and executor' })]);
  }
  if (typeof data !== 'object' || Array.isArray(data)) {
    return fail([toIssue({ line: 1, column: 1, text: 'a manifest is a mapping of key: value at the top level, e.g. "tool_id: my_tool"' })]);
  }
  const raw: Record<string, unknown> = { ...(data as Record<string, unknown>) };
  if (typeof raw['version'] === 'number') raw['version'] = source.scalarSource(['version']) ?? String(raw['version']);
  const alias = typeof raw['tool_type'] === 'string' ? TYPE_ALIASES[raw['tool_type']] : undefined;
  if (alias !== undefined) {
    raw['tool_type'] = alias.type;
    if ((raw['executor'] ?? null) === null && (raw['executor_id'] ?? null) === null) {
      delete raw['executor_id'];
      raw['executor'] = alias.executor;
    }
  }

  const parsed = toolManifestSchema.safeParse(raw, { reportInput: true });
  const params = parseParameters(raw['parameters'], source);
  const inputs: IssueInput[] = [...params.issues];
  if (!parsed.success) {
    inputs.unshift(...zodIssuesToInputs(parsed.error.issues, { source, hints: HINTS, allowedKeys: () => TOOL_MANIFEST_KEYS }).map(explainStrayKey));
    return fail(inputs.map(toIssue));
  }
  const manifest = parsed.data;
  const executor = resolveExecutor(manifest, source, inputs);
  const config = { ...manifest.config };
  if (manifest.entrypoint !== undefined) {
    if (config['entrypoint'] !== undefined && config['entrypoint'] !== manifest.entrypoint) {
      inputs.push({ field: 'entrypoint', text: `says "${manifest.entrypoint}" but config.entrypoint says "${String(config['entrypoint'])}"; keep one`, ...source.locate(['entrypoint']) });
    }
    config['entrypoint'] = manifest.entrypoint;
  }
  inputs.push(...checkRequirements(config['requires'], source));
  inputs.push(...checkSignature(text));
  if (inputs.length > 0) return fail(inputs.map(toIssue));

  const tool: Tool = {
    id: manifest.tool_id,
    type: manifest.tool_type as ToolType,
    executor,
    version: manifest.version ?? '0.0.0',
    description: manifest.description ?? '',
    // Unknown is unsafe: a tool is mutating until it says otherwise.
    mutatesState: manifest.mutates_state ?? true,
    requiresApproval: manifest.requires_approval ?? false,
    config,
    parameters: params.parameters,
    tags: manifest.tags ?? [],
    examples: manifest.examples ?? [],
    source: { path: label.file, tier },
    signature: findSignature('tool', text),
    ...(manifest.requires != null ? { requires: manifest.requires } : {}),
    ...(manifest.outputs !== undefined ? { outputs: manifest.outputs } : {}),
    ...(manifest.capabilities !== undefined ? { capabilities: manifest.capabilities } : {}),
    ...(manifest.isolation !== undefined ? { isolation: manifest.isolation as IsolationLevel } : {}),
  };
  return params.warnings.length > 0 ? { ok: true, value: tool, warnings: params.warnings.map(toIssue) } : { ok: true, value: tool };
}

function resolveExecutor(manifest: ToolManifest, source: YamlSource, issues: IssueInput[]): string | null {
  const located = (path: string, text: string): IssueInput => ({ field: path, text, ...source.locate([path]) });
  const { executor, executor_id: legacy } = manifest;
  if (executor !== undefined && legacy !== undefined && executor !== legacy) {
    issues.push(located('executor_id', `says "${legacy}" but executor says "${executor}"; keep only executor`));
  }
  const chosen = executor ?? legacy ?? undefined;
  // Kiwi's knowledge entries are read, not run (`executor: null`); one that names an executor keeps its chain.
  if (manifest.tool_type === 'knowledge' && chosen === undefined) return null;
  if (manifest.tool_type === 'primitive') {
    if (!(PRIMITIVES as readonly string[]).includes(manifest.tool_id)) {
      issues.push(
        located(
          'tool_id',
          `"${manifest.tool_id}" is not a built-in primitive; primitives are ${PRIMITIVES.join(', ')} — for anything else write tool_type: runtime (or script, api, ...) and an executor`,
        ),
      );
    }
    if (chosen !== undefined) {
      issues.push(located(executor != null ? 'executor' : 'executor_id', 'a primitive runs itself; remove the executor'));
    }
    return null;
  }
  if (chosen === undefined) {
    issues.push({
      field: 'executor',
      text: `is missing; a ${manifest.tool_type} tool must name the tool that runs it, e.g. executor: ${exampleExecutor(manifest.tool_type)}`,
      ...source.locate([]),
    });
    return null;
  }
  if (chosen === manifest.tool_id) {
    issues.push(located(executor != null ? 'executor' : 'executor_id', 'a tool cannot execute itself; name the runtime or primitive that runs it'));
  }
  return chosen;
}

function exampleExecutor(type: string): string {
  if (type === 'api' || type === 'mcp_server') return 'http_client';
  if (type === 'script') return 'python_runtime';
  if (type === 'runtime') return 'subprocess';
  if (type === 'mcp_tool') return 'my_mcp_server';
  if (type === 'directive' || type === 'thread') return 'llm_runtime';
  return 'subprocess';
}

function explainStrayKey(input: IssueInput): IssueInput {
  if (input.field === undefined || !REQUIRES_CHILDREN.includes(input.field)) return input;
  return { ...input, text: `${input.text}; if it belongs to requires, indent it under requires: (requires: { commands: [...], environment: [...] })` };
}

function checkSignature(text: string): IssueInput[] {
  const check = verifySignature('tool', text);
  if (check.status !== 'invalid') return [];
  return [
    {
      // The line follows a shebang when there is one.
      line: text.startsWith('#!') ? 2 : 1,
      column: 1,
      // Kiwi MCP hashed tools over a manifest it extracted itself; such files need one re-sign.
      text: 'signature does not match the content; run `kiwi sign <file>` after reviewing the change (tools signed by Kiwi MCP need this once)',
    },
  ];
}

/** `config.requires` of a Python tool: each a requirement the gateway can check before the tool runs (python-requirement.ts). */
function checkRequirements(requires: unknown, source: YamlSource): IssueInput[] {
  if (requires === undefined) return [];
  if (!Array.isArray(requires)) return [{ field: 'config.requires', text: 'must be a list of Python requirements, e.g. [httpx>=0.24.0, pydantic>=2.0]', ...source.locate(['config', 'requires']) }];
  return requires.flatMap((raw, i) => {
    const parsed = parseRequirement(raw);
    return parsed.ok ? [] : [{ field: `config.requires[${i}]`, text: parsed.reason, ...source.locate(['config', 'requires', i]) }];
  });
}
