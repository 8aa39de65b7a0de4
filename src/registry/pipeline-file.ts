/** `.ai/pipelines/*.yaml` → `Pipeline`, checked against the directives that loaded. */
import { z } from 'zod';
import { readPermissionTag } from './permission-tags.js';
import { templateRefs } from './pipeline-template.js';
import { PARAMETER_TYPES } from './tool-parameters.js';
import type { Directive, PermissionTag, Pipeline, PipelineStage, Tier } from './types.js';
import { fail, formatFieldPath, makeIssue, type FileLabel, type IssueInput, type ParseResult } from './validation-error.js';
import { parseYamlSource, type YamlSource } from './yaml-source.js';
import { oneOf, zodIssuesToInputs, type FieldHints } from './zod-issues.js';
import { checkInputs } from './directive-input-values.js';
import { isKiwiError } from '../base/errors.js';

/** Stages in all, stages of one parallel group, characters of one template, inputs of the pipeline. */
export const PIPELINE_CAPS = { stages: 32, parallel: 8, template: 4096, inputs: 32 } as const;

const NAME = /^[A-Za-z_][A-Za-z0-9_-]*$/u;
const name = (what: string) => z.string().regex(NAME, `is not a ${what} name; use letters, digits, _ and -, starting with a letter or _`);

const stage = z.strictObject({
  name: name('stage'),
  directive: z.string().min(1),
  inputs: z.record(z.string(), z.string().max(PIPELINE_CAPS.template, `a template is at most ${PIPELINE_CAPS.template} characters`)).optional(),
  model_tier: z.string().min(1).optional(),
});
const parallel = z.strictObject({ parallel: z.array(stage).min(1, 'lists no stage; write at least one').max(PIPELINE_CAPS.parallel, `at most ${PIPELINE_CAPS.parallel} stages run in one parallel group`) });
const input = z.strictObject({
  name: name('input'),
  type: oneOf('type', PARAMETER_TYPES).optional(),
  required: z.boolean().optional(),
  default: z.unknown().optional(),
  description: z.string().optional(),
});
const permission = z
  .partialRecord(z.enum(['read', 'write', 'execute']), z.partialRecord(z.enum(['resource', 'path', 'id', 'action']), z.string()))
  .refine((p) => Object.keys(p).length === 1, 'write one tag per item, e.g. { execute: { resource: tool, id: git_status } }');

const schema = z.strictObject({
  name: name('pipeline'),
  version: z.string().min(1),
  description: z.string().min(1),
  inputs: z.array(input).max(PIPELINE_CAPS.inputs, `at most ${PIPELINE_CAPS.inputs} inputs`).optional(),
  permissions: z.array(permission).optional(),
  // Each item is read by the schema its shape asks for (below): a union would only say "Invalid input".
  stages: z.array(z.unknown()).min(1, 'lists no stage; write at least one'),
});

type StageItem = z.output<typeof stage> | z.output<typeof parallel>;
const itemSchema = (item: unknown) => (typeof item === 'object' && item !== null && 'parallel' in item ? parallel : stage);

const KEYS: Readonly<Record<string, readonly string[]>> = { '': Object.keys(schema.shape), stage: Object.keys(stage.shape), input: Object.keys(input.shape) };

const HINTS: FieldHints = {
  name: 'a name like release_check (letters, digits, _ and -)',
  version: 'a quoted string like "1.0.0"',
  description: 'a string that says what the pipeline does',
  stages: 'a list of stages ({ name, directive, inputs }) and parallel groups ({ parallel: [stage, …] })',
  directive: 'the name of a directive in .ai/directives/',
  inputs: 'a mapping of the directive\'s inputs to templates, e.g. { focus: "${inputs.focus}" }',
  required: 'true or false (no quotes)',
};

/** Parses and checks one pipeline file. Never throws for bad input: every problem is an issue naming its line. */
export function parsePipeline(text: string, label: FileLabel, tier: Tier, directives: ReadonlyMap<string, Directive>): ParseResult<Pipeline> {
  const toIssue = (i: IssueInput) => makeIssue('pipeline', label, i);
  const yaml = parseYamlSource(text);
  if (!yaml.ok) return fail(yaml.errors.map(toIssue));
  const source = yaml.value;
  const data = source.data;
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return fail([toIssue({ line: 1, column: 1, text: 'a pipeline is a mapping with name, version, description and stages' })]);
  const raw = { ...(data as Record<string, unknown>) };
  if (typeof raw['version'] === 'number') raw['version'] = source.scalarSource(['version']) ?? String(raw['version']);
  const parsed = schema.safeParse(raw, { reportInput: true });
  const allowedKeys = (path: ReadonlyArray<PropertyKey>) => (path.length === 0 ? KEYS[''] : path[0] === 'inputs' ? KEYS['input'] : path[0] === 'stages' ? KEYS['stage'] : undefined) ?? [];
  if (!parsed.success) return fail(zodIssuesToInputs(parsed.error.issues, { source, hints: HINTS, allowedKeys }).map(toIssue));
  const items = parsed.data.stages.map((item) => itemSchema(item).safeParse(item, { reportInput: true }));
  const itemIssues = items.flatMap((r, i) => (r.success ? [] : zodIssuesToInputs(r.error.issues, { source, hints: HINTS, allowedKeys, basePath: ['stages', i] })));
  if (itemIssues.length > 0) return fail(itemIssues.map(toIssue));
  const file = { ...parsed.data, stages: items.map((r) => r.data as StageItem) };
  const problems: IssueInput[] = [];
  const at = (path: PropertyKey[], field: string, text: string): void => void problems.push({ field, text, ...source.locate(path) });
  const inputs = (file.inputs ?? []).map((i) => ({ name: i.name, type: (i.type ?? 'string') as Pipeline['inputs'][number]['type'], required: i.required ?? false, description: i.description ?? '', ...(i.default === undefined ? {} : { default: i.default }) }));
  inputs.forEach((i, n) => {
    if (inputs.findIndex((o) => o.name === i.name) !== n) at(['inputs', n, 'name'], `inputs[${n}].name`, `input "${i.name}" is declared twice; keep one`);
    if (i.default !== undefined) checkValue(() => checkInputs({ name: file.name, inputs: [i] }, { [i.name]: i.default }, 'pipeline'), (why) => at(['inputs', n, 'default'], `inputs[${n}].default`, why));
  });
  const permissions = file.permissions?.flatMap((p, n): PermissionTag[] => {
    const [kind, attrs] = Object.entries(p)[0] as [PermissionTag['kind'], Record<string, string>];
    const reading = readPermissionTag(kind, attrs);
    if (reading.ok) return [reading.tag];
    for (const r of reading.problems) at(['permissions', n], `permissions[${n}]`, r.reason);
    return [];
  });
  const groups = file.stages.map((s) => ('parallel' in s ? s.parallel : [s]).map((g): PipelineStage => ({ name: g.name, directive: g.directive, inputs: g.inputs ?? {}, ...(g.model_tier ? { modelTier: g.model_tier } : {}) })));
  checkStages(groups, { inputs: new Set(inputs.map((i) => i.name)), directives, at, source });
  if (problems.length > 0) return fail(problems.map(toIssue));
  return { ok: true, value: { name: file.name, version: file.version, description: file.description, inputs, ...(permissions ? { permissions } : {}), groups, source: { path: label.file, tier } } };
}

interface StageCheck {
  inputs: ReadonlySet<string>;
  directives: ReadonlyMap<string, Directive>;
  at(path: PropertyKey[], field: string, text: string): void;
  source: YamlSource;
}

/** Unique names, at most so many stages, known directives given their required inputs, and references only to inputs and to stages of earlier groups. */
function checkStages(groups: PipelineStage[][], check: StageCheck): void {
  const ended = new Set<string>();
  const seen = new Set<string>();
  let count = 0;
  groups.forEach((group, g) => {
    group.forEach((s, i) => {
      const path: PropertyKey[] = isParallel(check.source, g) ? ['stages', g, 'parallel', i] : ['stages', g];
      const field = formatFieldPath(path);
      if (++count === PIPELINE_CAPS.stages + 1) check.at(path, field, `a pipeline has at most ${PIPELINE_CAPS.stages} stages; split it in two`);
      if (seen.has(s.name)) check.at([...path, 'name'], `${field}.name`, `stage "${s.name}" is named twice; stage names must be unique`);
      seen.add(s.name);
      const directive = check.directives.get(s.directive);
      if (directive === undefined) {
        const known = [...check.directives.keys()];
        check.at([...path, 'directive'], `${field}.directive`, `no directive "${s.directive}" loaded; ${known.length === 0 ? 'there are none in .ai/directives/' : `the directives are ${known.join(', ')}`}`);
      } else {
        const declared = directive.inputs ?? [];
        for (const key of Object.keys(s.inputs)) if (!declared.some((d) => d.name === key)) check.at([...path, 'inputs', key], `${field}.inputs.${key}`, `directive ${directive.name} has no input "${key}"; ${declared.length === 0 ? 'it takes none' : `its inputs are ${declared.map((d) => d.name).join(', ')}`}`);
        for (const d of declared) if (d.required && !(d.name in s.inputs)) check.at([...path, 'inputs'], `${field}.inputs`, `directive ${directive.name} needs the input "${d.name}"; add ${d.name}: "…" (a template like \${inputs.X} or \${stages.NAME.result})`);
      }
      for (const [key, template] of Object.entries(s.inputs)) {
        const { refs, problems } = templateRefs(template);
        const here = (text: string): void => check.at([...path, 'inputs', key], `${field}.inputs.${key}`, text);
        problems.forEach(here);
        for (const ref of refs) {
          if (ref.kind === 'input' && !check.inputs.has(ref.name)) here(`\${inputs.${ref.name}}: the pipeline has no input "${ref.name}"; declare it under inputs:`);
          if (ref.kind === 'stage' && !ended.has(ref.stage)) here(`\${stages.${ref.stage}.${ref.field}}: ${group.some((o) => o.name === ref.stage) ? `stage "${ref.stage}" runs in the same parallel group, at the same time` : `no stage "${ref.stage}" runs before this one`}; a stage reads only stages of earlier groups`);
        }
      }
    });
    for (const s of group) ended.add(s.name);
  });
}

function isParallel(source: YamlSource, g: number): boolean {
  const item = (source.data as { stages: unknown[] }).stages[g];
  return typeof item === 'object' && item !== null && 'parallel' in item;
}

function checkValue(check: () => unknown, report: (why: string) => void): void {
  try {
    check();
  } catch (error) {
    if (!isKiwiError(error)) throw error;
    report(error.message);
  }
}
