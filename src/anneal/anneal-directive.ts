import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { isKiwiError, KiwiError } from '../base/errors.js';
import { DEMO_MODEL_ID } from '../llm/demo-provider.js';
import type { ChatProvider, ChatUsage } from '../llm/types.js';
import { parseDirective } from '../registry/directive-parser.js';
import { signText } from '../registry/signature.js';
import type { Directive, Registry } from '../registry/types.js';
import { classifyThread } from '../threads/failure-class.js';
import type { ThreadStore } from '../threads/thread-store.js';
import { directiveModel, findDirective } from '../threads/directive-choice.js';
import { annealProblems, droppedPermissions } from './anneal-check.js';
import { annealMessages, extractDirectiveFile, FILE_END, FILE_START, nextVersion, type FailedRun } from './anneal-prompt.js';

/**
 * `kiwi directives anneal NAME`: a directive improved from its failed runs. The most recent failed
 * threads of the version that runs (or the one named) and the directive's file go to the model its
 * tier maps to; the file in its answer is parsed by the registry's own parser, checked to keep the
 * name, raise the version and gain no rights (anneal-check.ts), signed, and written as a new file
 * beside the old one, which is never touched. The registry then runs the higher version and keeps
 * the older one loadable by its version.
 */

export interface AnnealDeps {
  /** Where the directive's threads are (`.ai/threads/`, or the Postgres replicas share). */
  threads: ThreadStore;
  registry: Registry;
  /** The provider and upstream model id for a model name (the gateway's upstreams; throws UNKNOWN_MODEL). */
  route(model: string): { provider: ChatProvider; model: string; upstream: string };
  /** The model a tier maps to (tier-model.ts). */
  tierModel(tier: string | undefined): string | undefined;
  now?: () => Date;
}

export interface AnnealOptions {
  name: string;
  /** Learn from this thread only (it must be the directive's, and have failed). */
  thread?: string;
  /** Overrides the tier's model. */
  model?: string;
  signal?: AbortSignal;
}

export interface AnnealOutcome {
  /** The new file (absolute). */
  file: string;
  version: string;
  previous: { file: string; version: string };
  model: string;
  /** The failed runs it learned from. */
  threads: { id: string; failure: string }[];
  /** What changed, one line each. */
  summary: string[];
  /** The new version as the registry reads it from `file`. */
  directive: Directive;
  /** The tokens the model's answer cost, by the upstream's model id, as the upstream counted them (absent when it did not say). */
  used?: { model: string; usage: ChatUsage };
}

/** The most recent failed runs it learns from: enough to see a pattern, few enough to fit a prompt. */
const MAX_ANNEAL_THREADS = 3;
/** How many recent threads are looked through for failed ones. */
const MAX_THREADS_SCANNED = 500;
/** A directive file is small; an answer far larger is not one. */
const MAX_ANSWER_CHARS = 1024 * 1024;

export async function annealDirective(deps: AnnealDeps, options: AnnealOptions): Promise<AnnealOutcome> {
  const directive = findDirective(deps.registry.directives, options.name);
  const runs = options.thread === undefined ? await recentFailures(deps.threads, directive) : [await namedFailure(deps.threads, directive, options.thread)];
  const model = directiveModel(deps.tierModel, directive, { model: options.model });
  if (model === DEMO_MODEL_ID) throw new KiwiError('INVALID_INPUT', `annealing needs a real model, and ${directive.name}'s tier runs on the offline demo model, which cannot write directives; configure an upstream in .ai/config/gateway.yaml, or pass --model`);
  const route = deps.route(model);

  const fileText = await readFile(directive.source.path, 'utf8');
  const messages = annealMessages(directive, fileText, runs, nextVersion(directive.version));
  const { text: answer, used } = await collectText(route.provider, { model: route.model, messages }, options.signal);
  const extracted = extractDirectiveFile(answer);
  const refused = (why: string): KiwiError => new KiwiError('INVALID_DIRECTIVE', `the model's answer was not written: ${why}; ${directive.source.path} is unchanged`);
  if (extracted === undefined) throw refused(`it has no file between a line "${FILE_START}" and a line "${FILE_END}"`);

  let signed: string;
  try {
    signed = signText('directive', extracted, (deps.now ?? (() => new Date()))());
  } catch (error) {
    if (isKiwiError(error)) throw refused(error.message);
    throw error;
  }
  // Parsed as the registry will parse it once written (its messages name the answer: there is no file yet).
  const parsed = parseDirective(signed, { file: directive.source.path, display: "the model's file" }, directive.source.tier);
  if (!parsed.ok) throw refused(`the registry's parser refuses it: ${parsed.issues.map((i) => i.message).join('; ')}`);
  const problems = annealProblems(directive, parsed.value);
  if (problems.length > 0) throw refused(problems.join('; '));
  const file = besideFile(directive.source.path, parsed.value.version);

  try {
    await writeFile(file, signed, { flag: 'wx', mode: 0o644 });
  } catch (error) {
    if ((error as { code?: unknown }).code === 'EEXIST') throw new KiwiError('CONFLICT', `${file} already exists; annealing never replaces a file: move it away, or anneal again for a higher version`);
    throw error;
  }
  return {
    file,
    version: parsed.value.version,
    previous: { file: directive.source.path, version: directive.version },
    model,
    threads: runs.map((r) => ({ id: r.id, failure: r.failure })),
    summary: changeSummary(directive, parsed.value, fileText, signed),
    directive: { ...parsed.value, source: { ...parsed.value.source, path: file } },
    ...(used === undefined ? {} : { used: { model: route.model, usage: used } }),
  };
}

async function recentFailures(threads: ThreadStore, directive: Directive): Promise<FailedRun[]> {
  const runs: FailedRun[] = [];
  for (const summary of await threads.list(MAX_THREADS_SCANNED)) {
    if (runs.length >= MAX_ANNEAL_THREADS) break;
    const header = summary.header;
    // Failures of an older version were what made the version that runs; a transcript without a version predates versions being recorded.
    if (header.directive !== directive.name || (header.version !== undefined && header.version !== directive.version) || summary.end === undefined) continue;
    const lines = await threads.read(header.id);
    const failure = classifyThread(lines);
    if (failure !== undefined) runs.push({ id: header.id, failure, lines });
  }
  if (runs.length === 0) {
    throw new KiwiError('NOT_FOUND', `no failed thread of directive ${directive.name} (version ${directive.version}) in ${threads.where}, so there is nothing to learn from; \`kiwi threads list\` shows the threads, --thread ID names one`);
  }
  return runs;
}

async function namedFailure(threads: ThreadStore, directive: Directive, id: string): Promise<FailedRun> {
  const lines = await threads.read(id);
  const header = lines[0];
  if (header?.type !== 'thread' || header.directive !== directive.name) throw new KiwiError('INVALID_INPUT', `thread ${id} ran ${header?.type === 'thread' ? `directive ${header.directive}` : 'nothing readable'}, not ${directive.name}`);
  const failure = classifyThread(lines);
  if (failure === undefined) throw new KiwiError('INVALID_INPUT', `thread ${id} ${lines.at(-1)?.type === 'end' ? 'did not fail' : 'has not ended'}, so there is nothing to learn from it; name a failed one (\`kiwi threads list\` shows them)`);
  return { id, failure, lines };
}

async function collectText(provider: ChatProvider, request: Parameters<ChatProvider['stream']>[0], signal: AbortSignal | undefined): Promise<{ text: string; used?: ChatUsage }> {
  let text = '';
  let used: ChatUsage | undefined;
  for await (const event of provider.stream(request, signal)) {
    if (event.type === 'finish') used = event.usage;
    if (event.type !== 'text') continue;
    text += event.text;
    if (text.length > MAX_ANSWER_CHARS) throw new KiwiError('PAYLOAD_TOO_LARGE', `the model's answer passed ${MAX_ANSWER_CHARS} characters; a directive file is far smaller, so nothing was written`);
  }
  return { text, ...(used === undefined ? {} : { used }) };
}

/** `review.md` 1.0.1 → `review.v1.0.1.md`, in the same folder; a `.vX` already in the name is replaced, not repeated. */
export function besideFile(old: string, version: string): string {
  const base = path.basename(old, '.md').replace(/\.v\d+(?:\.\d+)*$/, '');
  return path.join(path.dirname(old), `${base}.v${version.trim().replace(/^v/, '')}.md`);
}

function changeSummary(old: Directive, next: Directive, oldText: string, newText: string): string[] {
  const lines = [`version ${old.version} → ${next.version}`];
  if (next.description !== old.description) lines.push(`description: ${JSON.stringify(next.description)}`);
  const dropped = droppedPermissions(old, next);
  lines.push(dropped.length === 0 ? 'permissions: unchanged' : `permissions dropped: ${dropped.join(', ')}`);
  const oldInputs = (old.inputs ?? []).map((i) => i.name).join(', ');
  const newInputs = (next.inputs ?? []).map((i) => i.name).join(', ');
  if (oldInputs !== newInputs) lines.push(`inputs: ${oldInputs || '(none)'} → ${newInputs || '(none)'}`);
  const { added, removed } = lineChanges(oldText, newText);
  lines.push(`lines: ${added} added, ${removed} removed (the signature line included)`);
  return lines;
}

/** Lines of one text not in the other, counted with repeats: a summary of the change, not a diff. */
function lineChanges(a: string, b: string): { added: number; removed: number } {
  const count = (text: string): Map<string, number> => {
    const m = new Map<string, number>();
    for (const line of text.split(/\r?\n/)) m.set(line, (m.get(line) ?? 0) + 1);
    return m;
  };
  const x = count(a);
  const y = count(b);
  let added = 0;
  let removed = 0;
  for (const [line, n] of y) added += Math.max(0, n - (x.get(line) ?? 0));
  for (const [line, n] of x) removed += Math.max(0, n - (y.get(line) ?? 0));
  return { added, removed };
}
