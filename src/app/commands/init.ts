import { mkdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { INIT_FILES, type InitFile } from '../../cli/init-templates.js';
import { UsageError, type CliContext } from '../../cli/io.js';
import { parseFlags } from '../../cli/parse-flags.js';
import { INIT_HELP } from './init-help.js';

const USAGE = INIT_HELP.usage;

export interface InitReport {
  root: string;
  made: InitFile[];
  /** Files that were already there: left exactly as they were. */
  kept: InitFile[];
}

/** `kiwi init [DIR]`: a working `.ai/` (config, default-deny policy, runtimes, .gitignore); never overwrites. */
export async function initCommand(ctx: CliContext): Promise<number> {
  const { positionals } = parseFlags(ctx.argv, INIT_HELP);
  if (positionals.length > 1) throw new UsageError(`give at most one folder; usage: ${USAGE}`);
  const root = path.resolve(ctx.cwd, positionals[0] ?? '.');
  const report = await initProject(root);
  for (const line of describeInit(report, ctx.cwd)) ctx.io.out(line);
  return 0;
}

/** Writes each template that is not there yet; an existing file (or anything else at its path) is kept. */
export async function initProject(root: string): Promise<InitReport> {
  const found = await stat(root).catch(() => undefined);
  if (found !== undefined && !found.isDirectory()) throw new UsageError(`${root} is not a folder; give the folder to make the project in, e.g. kiwi init ${path.dirname(root)}`);
  const report: InitReport = { root, made: [], kept: [] };
  for (const file of INIT_FILES) {
    const target = path.join(root, ...file.path.split('/'));
    await mkdir(path.dirname(target), { recursive: true });
    try {
      // `wx`: created here or not at all, so a file that appears meanwhile is not overwritten either.
      await writeFile(target, file.text, { flag: 'wx' });
      report.made.push(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      report.kept.push(file);
    }
  }
  return report;
}

/** What init did, file by file, and what to do next. */
export function describeInit(report: InitReport, cwd: string): string[] {
  const shown = path.relative(cwd, report.root) || '.';
  const width = Math.max(...INIT_FILES.map((f) => f.path.length));
  const lines = [report.made.length > 0 ? `kiwi init: made a Kiwi project in ${report.root}` : `kiwi init: ${report.root} already has every file kiwi init writes; nothing changed`];
  for (const file of report.made) lines.push(`  made  ${file.path.padEnd(width)}  ${file.about}`);
  for (const file of report.kept) lines.push(`  kept  ${file.path.padEnd(width)}  already there, not changed`);
  const project = shown === '.' ? '' : ` --project ${shown}`;
  const dir = shown === '.' ? '' : `${shown}/`;
  lines.push(
    '',
    'Next steps:',
    `  1. Write a tool: a script and its manifest side by side, e.g. ${dir}.ai/tools/word_count.py and ${dir}.ai/tools/word_count.yaml:`,
    '       tool_id: word_count',
    '       tool_type: script',
    '       executor: python_runtime       # the script gets the arguments as JSON on stdin; what it prints is the result',
    '       version: "1.0.0"',
    '       description: "Count the words of a text"',
    '       mutates_state: false           # read-only: may be prefetched',
    '       config: { script: word_count.py }',
    '       parameters:',
    '         - { name: text, type: string, required: true }',
    '     and the script, word_count.py:',
    '       import json, sys',
    '       args = json.load(sys.stdin)',
    '       print(json.dumps({"words": len(args["text"].split())}))',
    `  2. Allow it: add its id to \`tools:\` in ${dir}.ai/config/policy.yaml (and paths it may read to \`filesystem.read\`)`,
    `  3. Try it:   kiwi tools validate${project} && kiwi run word_count --args '{"text": "one two"}'${project}`,
    `  4. Serve it: kiwi serve${project}   (then point a client at it: OpenAI SDKs at http://127.0.0.1:8787/v1, Anthropic SDKs at http://127.0.0.1:8787)`,
  );
  return lines;
}
