import { KiwiError } from '../base/errors.js';

/**
 * A pipeline stage's input as written: text with references in it. `${inputs.X}` is the
 * pipeline's input X, `${stages.NAME.result}` the last turn of an earlier stage's thread and
 * `${stages.NAME.status}` how it ended. Nothing else is read between `${` and `}`: no expressions.
 */

export type TemplateRef = { kind: 'input'; name: string } | { kind: 'stage'; stage: string; field: 'result' | 'status' };

const REF = /\$\{([^}]*)\}/gu;
const INPUT = /^inputs\.([A-Za-z_][A-Za-z0-9_-]*)$/u;
const STAGE = /^stages\.([A-Za-z_][A-Za-z0-9_-]*)\.(result|status)$/u;

/** The template's references, or why one is not a reference; an unclosed `${` is one too. */
export function templateRefs(template: string): { refs: TemplateRef[]; problems: string[] } {
  const refs: TemplateRef[] = [];
  const problems: string[] = [];
  for (const match of template.matchAll(REF)) {
    const ref = readRef((match[1] ?? '').trim());
    if (ref === undefined) problems.push(`${JSON.stringify(match[0])} is not a reference; write \${inputs.NAME}, \${stages.NAME.result} or \${stages.NAME.status}`);
    else refs.push(ref);
  }
  if (template.replace(REF, '').includes('${')) problems.push('has a "${" that is never closed with "}"');
  return { refs, problems };
}

function readRef(text: string): TemplateRef | undefined {
  const input = INPUT.exec(text);
  if (input) return { kind: 'input', name: input[1] as string };
  const stage = STAGE.exec(text);
  return stage ? { kind: 'stage', stage: stage[1] as string, field: stage[2] as 'result' | 'status' } : undefined;
}

export interface TemplateValues {
  inputs: Readonly<Record<string, unknown>>;
  stages: ReadonlyMap<string, { status: string; result: string }>;
}

/** The text with each reference replaced: text as it is, other values as JSON, an input not given as nothing. */
export function renderTemplate(template: string, values: TemplateValues): string {
  return template.replace(REF, (whole, inner: string) => {
    const ref = readRef(inner.trim());
    if (ref === undefined) throw new KiwiError('INVALID_INPUT', `${JSON.stringify(whole)} is not a reference`);
    if (ref.kind === 'input') return shown(values.inputs[ref.name]);
    const stage = values.stages.get(ref.stage);
    // The loader lets a stage name only stages that end before it starts.
    if (stage === undefined) throw new KiwiError('INTERNAL', `stage ${ref.stage} has not ended, yet a later stage reads its ${ref.field}`);
    return stage[ref.field];
  });
}

function shown(value: unknown): string {
  if (value === undefined) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}
