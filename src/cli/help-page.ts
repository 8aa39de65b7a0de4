import type { CommandHelp, FlagHelp, HelpExample } from './command-help.js';

/** Pages are wrapped for an 80-column terminal; commands in examples are never wrapped, so they paste. */
const WIDTH = 80;
const INDENT = '  ';
/** Labels wider than this put their text on the next line. */
const MAX_LABEL = 24;

export interface OverviewGroup {
  readonly title: string;
  readonly commands: readonly CommandHelp[];
}

/** What `kiwi --help` prints: each command on one line, by group, and how to get a command's page. */
export function overviewPage(intro: string, groups: readonly OverviewGroup[], notes: readonly (readonly [string, string])[]): string {
  const width = Math.max(...groups.flatMap((g) => g.commands.map((c) => c.name.length)));
  return [
    intro,
    section('USAGE', [`${INDENT}kiwi COMMAND [SUBCOMMAND] [FLAGS]`]),
    ...groups.map((g) => section(g.title, g.commands.map((c) => `${INDENT}${c.name.padEnd(width)}  ${c.summary}`))),
    section('FLAGS AND ENVIRONMENT', table(notes)),
    section('LEARN MORE', table([
      ['kiwi help COMMAND', "a command's page: what it does, every flag, examples (or: kiwi COMMAND --help)"],
      ['kiwi help COMMAND SUB', "a subcommand's page (or: kiwi COMMAND SUB --help)"],
    ])),
  ].join('\n\n');
}

/** A command's page (NAME, USAGE, DESCRIPTION, COMMANDS, FLAGS, EXAMPLES), or one subcommand's. */
export function helpPage(help: CommandHelp, subcommand?: string): string {
  const sub = help.subcommands?.find((s) => s.name === subcommand);
  if (sub) {
    return [
      section('NAME', [`${INDENT}kiwi ${help.name} ${sub.name} — ${sub.summary}`]),
      section('USAGE', [`${INDENT}${sub.usage}`]),
      ...(sub.about ? [section('DESCRIPTION', paragraphs(sub.about))] : []),
      section('FLAGS', flagRows(sub.flags.map((name) => [name, help.flags[name] as FlagHelp]))),
      section('EXAMPLES', examples(sub.examples)),
      section('LEARN MORE', [`${INDENT}kiwi help ${help.name}: the other ${help.name} commands`]),
    ].join('\n\n');
  }
  const subs = help.subcommands ?? [];
  return [
    section('NAME', [`${INDENT}kiwi ${help.name} — ${help.summary}`]),
    section('USAGE', subs.length > 0 ? subs.map((s) => `${INDENT}${s.usage}`) : [`${INDENT}${help.usage}`]),
    ...(help.about ? [section('DESCRIPTION', paragraphs(help.about))] : []),
    ...(subs.length > 0 ? [section('COMMANDS', table(subs.map((s) => [s.name, s.summary])))] : []),
    section('FLAGS', flagRows(Object.entries(help.flags))),
    section('EXAMPLES', examples(help.examples)),
    ...(subs.length > 0 ? [section('LEARN MORE', [`${INDENT}kiwi help ${help.name} COMMAND: one command's page, with its flags and examples`])] : []),
  ].join('\n\n');
}

/** How a flag is written on the page: `-n N`, `--port PORT`, `--input KEY=VALUE`, `-h, --help`. */
export function flagLabel(name: string, flag: Pick<FlagHelp, 'type' | 'short' | 'value'>): string {
  const value = flag.type === 'string' ? ` ${flag.value ?? 'VALUE'}` : '';
  if (name.length === 1 && flag.short === name) return `-${name}${value}`;
  return `${flag.short ? `-${flag.short}, ` : ''}--${name}${value}`;
}

function flagRows(flags: readonly (readonly [string, FlagHelp])[]): string[] {
  const rows = flags.map(([name, flag]): [string, string] => [
    flagLabel(name, flag),
    `${flag.help}${flag.multiple ? '; may be repeated' : ''}${flag.default !== undefined ? ` (default: ${flag.default})` : ''}`,
  ]);
  return table([...rows, ['-h, --help', 'print this page, run nothing']]);
}

function examples(list: readonly HelpExample[]): string[] {
  return list.flatMap((e, i) => [...(i > 0 && e.about ? [''] : []), ...(e.about ? wrap(`# ${e.about}`, INDENT) : []), `${INDENT}$ ${e.run}`]);
}

function section(title: string, lines: readonly string[]): string {
  return [title, ...lines].join('\n');
}

/** Paragraphs (split at a blank line), each wrapped, a blank line between them. */
function paragraphs(text: string): string[] {
  return text.split(/\n\s*\n/).flatMap((p, i) => [...(i > 0 ? [''] : []), ...wrap(p, INDENT)]);
}

/** Two columns: the label, then its text wrapped under itself; a long label puts its text below. */
function table(rows: readonly (readonly [string, string])[]): string[] {
  const width = Math.min(MAX_LABEL, Math.max(...rows.map(([label]) => label.length)));
  const hang = `${INDENT}${' '.repeat(width)}  `;
  return rows.flatMap(([label, text]) => {
    if (label.length > width) return [`${INDENT}${label}`, ...wrap(text, hang)];
    const [first = '', ...rest] = wrap(text, hang);
    return [`${INDENT}${label.padEnd(width)}  ${first.slice(hang.length)}`, ...rest];
  });
}

/** Words filled into lines of at most WIDTH columns, each line after `indent`; a word longer than a line stands alone. */
function wrap(text: string, indent: string): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter((w) => w !== '')) {
    if (line !== '' && indent.length + line.length + 1 + word.length > WIDTH) {
      lines.push(indent + line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  if (line !== '') lines.push(indent + line);
  return lines;
}
