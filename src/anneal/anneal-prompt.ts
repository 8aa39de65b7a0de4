import { createDataFence } from '../base/data-fence.js';
import type { ChatMessage } from '../llm/types.js';
import type { Directive } from '../registry/types.js';
import { textHead, textTail } from '../base/text-cut.js';
import type { ThreadLine } from '../threads/thread-store.js';
import { threadLineText } from '../threads/thread-text.js';

/**
 * What annealing asks the model, and how its answer is read: the directive's file and the
 * transcripts of failed runs (each capped, between data fences: they are what agents and tools
 * wrote, never instructions), and the rules an improved version must keep. The answer carries the
 * whole new file between two marker lines, so nothing the model says around it ends up in it.
 */

export const FILE_START = '<<<DIRECTIVE FILE';
export const FILE_END = 'DIRECTIVE FILE>>>';

/** One failed run as the prompt shows it. */
export interface FailedRun {
  id: string;
  failure: string;
  lines: readonly ThreadLine[];
}

/** Per transcript; a long one keeps its start and its end, where failures show. */
const MAX_TRANSCRIPT_CHARS = 8000;
const MAX_LINE_CHARS = 600;

export function annealMessages(directive: Directive, fileText: string, runs: readonly FailedRun[], nextVersion: string): ChatMessage[] {
  const transcripts = runs.map((run) => transcriptText(run.lines));
  const fence = createDataFence([fileText, ...transcripts]);
  const system = [
    'You improve Kiwi directives: Markdown files with one <directive name version> XML block (metadata, inputs, process steps, outputs) that an agent follows as a thread, calling tools with intents.',
    'You get a directive and transcripts of runs of it that failed, each with its failure class. Write an improved version of the whole file that would avoid those failures: clearer or reordered steps, explicit values, what to do when a tool is denied, a file is missing or nothing fits.',
    'Rules:',
    `- Keep name="${directive.name}". Set version higher than ${directive.version}: ${nextVersion}.`,
    '- Never add a permission, raise or remove a limit, or change the hooks or the model tier: an improved directive never gets more rights or budget. You may drop a permission it does not need.',
    `- ${fence.notice}`,
    `- Answer with the complete new file between a line "${FILE_START}" and a line "${FILE_END}", then at most one short paragraph on what you changed.`,
  ].join('\n');
  const failures = runs.map((run, i) => `Run ${i + 1}: thread ${run.id}, failure: ${run.failure}\n${fence.wrap(transcripts[i] as string)}`);
  const user = [`The directive file (version ${directive.version}):`, fence.wrap(fileText), `Its failed runs (${runs.length}), newest first:`, ...failures].join('\n\n');
  return [
    { role: 'system', content: system },
    { role: 'user', content: user },
  ];
}

/** The file between the marker lines of the answer, or undefined when they are not there. */
export function extractDirectiveFile(answer: string): string | undefined {
  const lines = answer.replace(/\r\n/g, '\n').split('\n');
  const start = lines.findIndex((l) => l.trim() === FILE_START);
  if (start < 0) return undefined;
  const end = lines.findIndex((l, i) => i > start && l.trim() === FILE_END);
  if (end < 0) return undefined;
  const file = lines.slice(start + 1, end).join('\n').trim();
  return file === '' ? undefined : `${file}\n`;
}

/** The version after `version`: its last number one higher (`1.0.0` → `1.0.1`, `2` → `3`). */
export function nextVersion(version: string): string {
  const match = /^(v?(?:\d+\.)*)(\d+)$/.exec(version.trim());
  if (match === null) return `${version}.1`;
  return `${match[1]}${Number(match[2]) + 1}`;
}

/** A transcript in the words `kiwi threads show` uses, each line capped, the whole capped. */
function transcriptText(lines: readonly ThreadLine[]): string {
  const out = lines.map((line) => threadLineText(line, { turn: MAX_LINE_CHARS, item: MAX_LINE_CHARS }));
  const text = out.join('\n');
  if (text.length <= MAX_TRANSCRIPT_CHARS) return text;
  const half = MAX_TRANSCRIPT_CHARS / 2;
  return `${textHead(text, half)}\n… (${text.length - MAX_TRANSCRIPT_CHARS} characters of the transcript left out) …\n${textTail(text, half)}`;
}
