import { z } from 'zod';
import { KiwiError } from '../base/errors.js';
import { TOOL_ID_PATTERN } from './tool-name.js';
import type { FileLabel, IssueInput } from './validation-error.js';
import { parseYamlSource } from './yaml-source.js';
import { zodIssuesToInputs, type FieldHints } from './zod-issues.js';

/**
 * An environment (`.ai/environments/NAME.yaml`): a directive saved with what it runs with — its
 * inputs' defaults, the tools and knowledge given to it up front, the model tier — and the version
 * and digest of each, as they were when it was saved (`kiwi env save`). A run starts from exactly
 * that, or is refused when something it names has changed since (environment-pins.ts).
 */
export interface EnvironmentFile {
  name: string;
  description: string;
  directive: ItemPin & { name: string };
  inputs: Record<string, unknown>;
  tools: Array<ItemPin & { id: string }>;
  knowledge: Array<ItemPin & { id: string }>;
  modelTier?: string;
  model?: string;
  savedAt?: string;
  label: FileLabel;
}

/** An item as it was when the environment was saved: its version and a digest of what it said. */
export interface ItemPin {
  version: string;
  digest: string;
}

/** The names `kiwi env` takes: a file name too, so nothing else of path syntax. */
export const ENVIRONMENT_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
/** More than an agent's first message should carry, and more than anyone picks by hand. */
export const MAX_PRELOADED = 32;

const DIGEST = /^sha256:[0-9a-f]{64}$/;
const pin = { version: z.string().min(1).max(64), digest: z.string().regex(DIGEST, 'must be "sha256:" and 64 hex digits, as `kiwi env save` writes it') };
const itemId = z.string().regex(TOOL_ID_PATTERN, 'must be an id like git_status (A-Z, a-z, 0-9, "_", "." and "-")');

const schema = z
  .strictObject({
    name: z.string().regex(ENVIRONMENT_NAME, 'must be a name like review_src (letters, digits, "_", "." and "-", at most 64)'),
    description: z.string().max(2000).optional(),
    directive: z.strictObject({ name: itemId, ...pin }),
    inputs: z.record(z.string().max(128), z.unknown()).optional(),
    tools: z.array(z.strictObject({ id: itemId, ...pin })).max(MAX_PRELOADED).optional(),
    knowledge: z.array(z.strictObject({ id: itemId, ...pin })).max(MAX_PRELOADED).optional(),
    model_tier: z.string().min(1).max(64).optional(),
    model: z.string().min(1).max(200).optional(),
    saved_at: z.string().max(64).optional(),
  })
  .refine((e) => e.model_tier === undefined || e.model === undefined, { message: 'give model_tier or model, not both', path: ['model'] });

const KEYS = ['name', 'description', 'directive', 'inputs', 'tools', 'knowledge', 'model_tier', 'model', 'saved_at'];

const HINTS: FieldHints = {
  name: 'the environment\'s name, the same as its file name, e.g. review_src',
  directive: 'a mapping { name, version, digest }, as `kiwi env save` writes it',
  inputs: 'a mapping of the directive\'s inputs to their values, e.g. { focus: src }',
  tools: 'a list of { id, version, digest }',
  knowledge: 'a list of { id, version, digest }',
  model_tier: 'a tier that .ai/config/gateway.yaml maps, e.g. fast',
};

/** Parses one environment file; INVALID_INPUT saying `file:line:col: field: what to write` for each problem. */
export function parseEnvironment(text: string, label: FileLabel, expectedName: string): EnvironmentFile {
  const yaml = parseYamlSource(text);
  if (!yaml.ok) throw invalid(label, yaml.errors);
  const parsed = schema.safeParse(yaml.value.data ?? {}, { reportInput: true });
  if (!parsed.success) throw invalid(label, zodIssuesToInputs(parsed.error.issues, { source: yaml.value, hints: HINTS, allowedKeys: (path) => (path.length === 0 ? KEYS : []) }));
  const e = parsed.data;
  if (e.name !== expectedName) throw invalid(label, [{ field: 'name', ...yaml.value.locate(['name']), text: `is ${JSON.stringify(e.name)} but the file is ${expectedName}.yaml; make them the same` }]);
  const twice = [...repeated(e.tools ?? []), ...repeated(e.knowledge ?? [])];
  if (twice.length > 0) throw invalid(label, [{ text: `${twice.join(', ')} listed more than once; list each once` }]);
  return {
    name: e.name,
    description: e.description ?? '',
    directive: e.directive,
    inputs: e.inputs ?? {},
    tools: e.tools ?? [],
    knowledge: e.knowledge ?? [],
    ...(e.model_tier === undefined ? {} : { modelTier: e.model_tier }),
    ...(e.model === undefined ? {} : { model: e.model }),
    ...(e.saved_at === undefined ? {} : { savedAt: e.saved_at }),
    label,
  };
}

function repeated(items: ReadonlyArray<{ id: string }>): string[] {
  const seen = new Set<string>();
  return items.filter((i) => seen.size === seen.add(i.id).size).map((i) => i.id);
}

function invalid(label: FileLabel, inputs: readonly IssueInput[]): KiwiError {
  const lines = inputs.map((i) => {
    const where = i.line === undefined ? label.display : `${label.display}:${i.line}:${i.column ?? 1}`;
    return `${where}: ${i.field ? `${i.field}: ` : ''}${i.text}`;
  });
  return new KiwiError('INVALID_INPUT', `environment ${label.display} does not load:\n  ${lines.join('\n  ')}`);
}
