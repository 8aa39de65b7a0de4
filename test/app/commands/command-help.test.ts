import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMAND_GROUPS } from '../../../src/app/cli-commands.js';
import { COMMAND_NAMES, OVERVIEW, runCli } from '../../../src/app/run-cli.js';
import type { CommandHelp } from '../../../src/cli/command-help.js';
import { flagLabel, helpPage } from '../../../src/cli/help-page.js';
import { parserOptions } from '../../../src/cli/parse-flags.js';
import { REPO_ROOT } from '../../helpers/temp-project.js';

const COMMANDS: CommandHelp[] = COMMAND_GROUPS.flatMap((g) => g.commands.map((c) => c.help));
const SUBCOMMANDS = COMMANDS.flatMap((help) => (help.subcommands ?? []).map((sub) => ({ help, sub })));

async function kiwi(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { env: {}, cwd: REPO_ROOT, io: { out: (l) => out.push(l), err: (l) => err.push(l) } });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

/**
 * The flags the command's parser takes, as parseFlags hands them to node:util parseArgs: each
 * long name, and its short one. This is the parser's own definition, not the page.
 */
function acceptedFlags(help: CommandHelp): string[] {
  return Object.entries(parserOptions(help.flags)).flatMap(([name, o]) => [`--${name}`, ...(o.short ? [`-${o.short}`] : [])]);
}

/** How a flag of the help may be written: `--name`, and `-s` when it has a short form. */
function forms(help: CommandHelp, name: string): string[] {
  const short = help.flags[name]?.short;
  return [`--${name}`, ...(short ? [`-${short}`] : [])];
}

/** Every flag written in a text (usage lines, examples): `--name`, `-n`; not a hyphen inside a word or a number. */
function flagsWritten(text: string): string[] {
  return [...text.matchAll(/(?<![\w./-])(--?[a-zA-Z][\w-]*)/g)].map((m) => m[1] as string);
}

describe('every command and subcommand has real help', () => {
  it('walks every command: a summary that fits the overview, a usage, an example of itself', () => {
    expect(COMMANDS.map((c) => c.name)).toEqual(COMMAND_NAMES);
    expect(new Set(COMMAND_NAMES).size).toBe(COMMAND_NAMES.length);
    for (const help of COMMANDS) {
      expect(help.summary.trim(), help.name).not.toBe('');
      expect(help.summary.length, `${help.name}: "${help.summary}" is too long for one line of kiwi --help`).toBeLessThanOrEqual(65);
      expect(help.usage, help.name).toMatch(new RegExp(`^kiwi ${help.name}\\b`));
      expect(help.examples.length, `${help.name} has no example`).toBeGreaterThan(0);
      for (const e of help.examples) expect(e.run, help.name).toMatch(new RegExp(`^kiwi ${help.name}\\b`));
    }
  });

  it('walks every subcommand: a summary, a usage and an example of itself, and a page of its own', () => {
    expect(SUBCOMMANDS.length).toBeGreaterThan(30);
    for (const { help, sub } of SUBCOMMANDS) {
      const name = `kiwi ${help.name} ${sub.name}`;
      expect(sub.summary.trim(), name).not.toBe('');
      expect(sub.usage, name).toMatch(new RegExp(`^${name}\\b`));
      expect(sub.examples.length, `${name} has no example`).toBeGreaterThan(0);
      for (const e of sub.examples) expect(e.run, name).toMatch(new RegExp(`^${name}\\b`));
      expect(helpPage(help, sub.name), name).not.toBe(helpPage(help));
      expect(helpPage(help, sub.name), name).toContain(`NAME\n  ${name} — ${sub.summary}`);
      // A flag its usage shows is one its page explains.
      for (const flag of flagsWritten(sub.usage)) expect(sub.flags.flatMap((f) => forms(help, f)), `${name}: ${flag}`).toContain(flag);
    }
  });

  it("lists every flag the command's parser accepts, with a line of help, on its page and in its short usage", () => {
    for (const help of COMMANDS) {
      const page = helpPage(help);
      for (const [name, flag] of Object.entries(help.flags)) {
        expect(flag.help.trim(), `kiwi ${help.name} --${name}`).not.toBe('');
        if (flag.type === 'string') expect(flag.value, `kiwi ${help.name} --${name} names its value`).toBeDefined();
        expect(page, `kiwi ${help.name} --${name}`).toMatch(new RegExp(`^  ${escape(flagLabel(name, flag))}(  |$)`, 'm'));
      }
      const written = new Set(flagsWritten(help.usage));
      for (const name of Object.keys(parserOptions(help.flags))) {
        expect(forms(help, name).some((f) => written.has(f)), `kiwi ${help.name}: the short usage does not show --${name}`).toBe(true);
      }
    }
  });

  it('names no flag the parser does not accept, in a usage line or an example', () => {
    for (const help of COMMANDS) {
      const accepted = new Set(acceptedFlags(help));
      const texts = [help.usage, ...help.examples.map((e) => e.run), ...(help.subcommands ?? []).flatMap((s) => [s.usage, ...s.examples.map((e) => e.run)])];
      for (const text of texts) for (const flag of flagsWritten(text)) expect(accepted, `kiwi ${help.name}: ${flag} in "${text}"`).toContain(flag);
    }
  });

  it('parses with the help it shows: no command defines flags of its own, and each uses the help the table serves', () => {
    const table = readFileSync(path.join(REPO_ROOT, 'src/app/cli-commands.ts'), 'utf8');
    const entries = [...table.matchAll(/\{ help: (\w+), load: async \(\) => \(await import\('([^']+)'\)\)/g)];
    expect(entries.map((m) => m[1])).toHaveLength(COMMANDS.length);
    for (const [, helpName, module] of entries) {
      const file = path.join(REPO_ROOT, 'src/app', (module as string).replace(/\.js$/, '.ts'));
      const code = readFileSync(file, 'utf8');
      expect(code, `${file} parses with ${helpName}`).toMatch(new RegExp(`parse(?:Flags)?\\(ctx(?:\\.argv)?, ${helpName}\\)`));
    }
    // node:util parseArgs is called in one place: parseFlags, over the help's flags.
    const dir = 'src/app/commands';
    for (const file of readdirTs(dir)) expect(readFileSync(path.join(REPO_ROOT, dir, file), 'utf8'), `${dir}/${file}`).not.toMatch(/\bparseArgs\b/);
  });
});

describe('kiwi --help, kiwi help COMMAND, kiwi COMMAND [SUB] --help', () => {
  it('prints each command\'s page for --help, -h and kiwi help COMMAND, exit 0', async () => {
    for (const help of COMMANDS) {
      const page = helpPage(help);
      for (const argv of [[help.name, '--help'], [help.name, '-h'], ['help', help.name], [help.name, '--json', '--help']]) {
        expect(await kiwi(...argv), `kiwi ${argv.join(' ')}`).toEqual({ code: 0, out: page, err: '' });
      }
    }
  });

  it("prints a subcommand's page, not its parent's, for SUB --help and kiwi help COMMAND SUB", async () => {
    for (const { help, sub } of SUBCOMMANDS) {
      const page = helpPage(help, sub.name);
      for (const argv of [[help.name, sub.name, '--help'], [help.name, sub.name, '-h'], ['help', help.name, sub.name]]) {
        expect(await kiwi(...argv), `kiwi ${argv.join(' ')}`).toEqual({ code: 0, out: page, err: '' });
      }
    }
    // Flags before the subcommand, a value that looks like one, and a flag it does not know.
    const pull = helpPage(COMMANDS.find((c) => c.name === 'registry')!, 'pull');
    expect((await kiwi('registry', '--project', 'push', 'pull', '--help')).out).toBe(pull);
    expect((await kiwi('registry', '--nope', 'pull', '-h')).out).toBe(pull);
    expect((await kiwi('run', 'git_log', '--help')).out).toBe(helpPage(COMMANDS.find((c) => c.name === 'run')!));
  });

  it("answers kiwi registry push --help with push's page, not registry's one usage line (issue 41)", async () => {
    const parent = await kiwi('registry', '--help');
    const push = await kiwi('registry', 'push', '--help');
    expect(push.code).toBe(0);
    expect(push.out).not.toBe(parent.out);
    expect(push.out).toMatch(/^NAME\n {2}kiwi registry push — /);
    expect(push.out).toMatch(/^EXAMPLES\n {2}\$ kiwi registry push/m);
    expect(push.out).not.toContain('--force');
    expect((await kiwi('run', '--help')).out).toMatch(/^FLAGS\n {2}--args JSON +the tool's arguments/m);
  });

  it('has an overview with one line per command that says how to get more, exit 0 (2 with no command)', async () => {
    const r = await kiwi('--help');
    expect(r).toEqual({ code: 0, out: OVERVIEW, err: '' });
    for (const help of COMMANDS) expect(r.out).toMatch(new RegExp(`^  ${help.name} +${escape(help.summary)}$`, 'm'));
    expect(r.out).toContain('kiwi help COMMAND');
    expect(await kiwi('help')).toEqual({ code: 0, out: OVERVIEW, err: '' });
    expect(await kiwi('-h')).toEqual({ code: 0, out: OVERVIEW, err: '' });
    expect(await kiwi()).toEqual({ code: 2, out: OVERVIEW, err: '' });
  });

  it('fits pages in 80 columns, except the usage and example lines, which must paste whole', () => {
    const lines = [OVERVIEW, ...COMMANDS.map((h) => helpPage(h)), ...SUBCOMMANDS.map(({ help, sub }) => helpPage(help, sub.name))].flatMap((p) => p.split('\n'));
    for (const line of lines) if (!/^ {2}(kiwi |\$ kiwi )/.test(line)) expect(line.length, line).toBeLessThanOrEqual(80);
  });

  it('refuses help for what does not exist, exit 2', async () => {
    expect(await kiwi('help', 'nope')).toMatchObject({ code: 2, out: '', err: expect.stringMatching(/^kiwi help: unknown command `nope`/) });
    expect(await kiwi('help', 'registry', 'nope')).toMatchObject({ code: 2, out: '', err: expect.stringMatching(/has no command `nope`; its commands are push, pin, unpin, pull, list, show/) });
    expect(await kiwi('help', 'run', 'extra')).toMatchObject({ code: 2, err: expect.stringMatching(/it has no subcommands/) });
  });

  it('keeps the short usage and exit 2 for a usage mistake; -h after -- is an argument', async () => {
    expect(await kiwi('containers')).toEqual({ code: 2, out: '', err: 'kiwi containers: usage: kiwi containers build|check' });
    expect(await kiwi('containers', 'build', '--', '-h')).toEqual({ code: 2, out: '', err: 'kiwi containers: usage: kiwi containers build|check' });
    expect(await kiwi('sign', '--nope', 'x.md')).toMatchObject({ code: 2, out: '', err: expect.stringMatching(/^kiwi sign: Unknown option '--nope'.*; usage: kiwi sign FILE\.\.\. \[--kind directive\|knowledge\|tool\]$/) });
    expect((await kiwi('verify')).err).toBe('kiwi verify: name at least one file; usage: kiwi verify FILE... [--kind directive|knowledge|tool]');
  });
});

describe('docs/cli.md', () => {
  it('says how to get help, and shows the short usage of every command as a usage mistake prints it', () => {
    const doc = readFileSync(path.join(REPO_ROOT, 'docs/cli.md'), 'utf8');
    expect(doc).toContain('kiwi help COMMAND');
    const block = /## Usage lines[^\n]*\n\n```text\n([\s\S]*?)```/.exec(doc)?.[1];
    expect(block?.trimEnd().split('\n')).toEqual(COMMANDS.map((c) => c.usage));
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function readdirTs(dir: string): string[] {
  return readdirSync(path.join(REPO_ROOT, dir)).filter((f) => f.endsWith('.ts'));
}
