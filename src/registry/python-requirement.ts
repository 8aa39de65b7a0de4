/**
 * `config.requires` of a Python tool (`httpx>=0.24.0`, `pydantic[email]>=2.0,<3`): a subset of
 * PEP 508 that can be checked without installing anything — a name, extras (ignored), and
 * comparisons with ==, !=, >=, <=, >, < and ~= on release numbers (`==1.2.*` too). Markers,
 * URLs and `===` are refused, so nothing is read that the check would then ignore.
 */

export type Comparison = '==' | '!=' | '>=' | '<=' | '>' | '<' | '~=';

export interface VersionClause {
  op: Comparison;
  /** The release numbers as written, `1.2` for `1.2` and for `1.2.*`. */
  release: number[];
  /** `==1.2.*` / `!=1.2.*`: a prefix match. */
  wildcard: boolean;
  text: string;
}

export interface Requirement {
  /** The name as written, for messages and `pip install`. */
  name: string;
  clauses: VersionClause[];
  /** The requirement as written, trimmed. */
  text: string;
}

export type RequirementParse = { ok: true; value: Requirement } | { ok: false; reason: string };

const NAME = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/;
const EXTRAS = /^\[\s*[A-Za-z0-9._-]+(?:\s*,\s*[A-Za-z0-9._-]+)*\s*\]$/;
const CLAUSE = /^(==|!=|>=|<=|~=|>|<)\s*(\d{1,9}(?:\.\d{1,9}){0,9})(\.\*)?$/;
const MAX_LENGTH = 200;
const FORM = 'write a package name and version comparisons, e.g. "httpx>=0.24.0" or "pydantic>=2.0,<3"';

export function parseRequirement(raw: unknown): RequirementParse {
  if (typeof raw !== 'string') return { ok: false, reason: `${JSON.stringify(raw)} is not a string; ${FORM}` };
  const text = raw.trim();
  if (text === '' || text.length > MAX_LENGTH) return { ok: false, reason: `a requirement must be 1 to ${MAX_LENGTH} characters; ${FORM}` };
  if (/[;@]/.test(text)) return { ok: false, reason: `"${text}": environment markers (;) and URLs (@) are not supported; ${FORM}` };
  const name = /^[A-Za-z0-9._-]+/.exec(text)?.[0] ?? '';
  if (!NAME.test(name)) return { ok: false, reason: `"${text}" does not start with a package name; ${FORM}` };
  let rest = text.slice(name.length).trim();
  if (rest.startsWith('[')) {
    const end = rest.indexOf(']');
    if (end < 0 || !EXTRAS.test(rest.slice(0, end + 1))) return { ok: false, reason: `"${text}": extras are written [a,b]; ${FORM}` };
    rest = rest.slice(end + 1).trim();
  }
  if (rest.startsWith('(') && rest.endsWith(')')) rest = rest.slice(1, -1).trim();
  const clauses: VersionClause[] = [];
  if (rest !== '') {
    for (const part of rest.split(',')) {
      const clause = parseClause(part.trim());
      if (typeof clause === 'string') return { ok: false, reason: `"${text}": ${clause}; ${FORM}` };
      clauses.push(clause);
    }
  }
  return { ok: true, value: { name, clauses, text } };
}

function parseClause(part: string): VersionClause | string {
  if (part.startsWith('===')) return `"${part}": === (arbitrary equality) is not supported`;
  const m = CLAUSE.exec(part);
  if (m === null) return `"${part}" is not a comparison (==, !=, >=, <=, >, < or ~= and a version of numbers like 2.0.1)`;
  const op = m[1] as Comparison;
  const wildcard = m[3] !== undefined;
  if (wildcard && op !== '==' && op !== '!=') return `"${part}": a .* version goes with == or != only`;
  const release = (m[2] as string).split('.').map(Number);
  if (op === '~=' && release.length < 2) return `"${part}": ~= needs at least two numbers, e.g. ~=2.1`;
  return { op, release, wildcard, text: `${op}${m[2] as string}${wildcard ? '.*' : ''}` };
}

/** The installed version's release numbers and whether it is a pre-release (`2.0.0rc1`, `1.0.dev3`); undefined when it has none. */
export function readInstalledVersion(version: string): { release: number[]; pre: boolean } | undefined {
  const m = /^v?(\d{1,9}(?:\.\d{1,9})*)(.*)$/i.exec(version.trim());
  if (m === null) return undefined;
  return { release: (m[1] as string).split('.').map(Number), pre: /^[-_.]?(a|alpha|b|beta|c|rc|pre|preview|dev)/i.test(m[2] as string) };
}

/** Whether an installed version satisfies every clause; a pre-release sorts just below its release. */
export function satisfies(installed: string, clauses: readonly VersionClause[]): boolean {
  const version = readInstalledVersion(installed);
  if (version === undefined) return false;
  return clauses.every((c) => holds(version, c));
}

function holds(version: { release: number[]; pre: boolean }, clause: VersionClause): boolean {
  if (clause.wildcard) {
    const prefix = clause.release.every((n, i) => (version.release[i] ?? 0) === n);
    return clause.op === '==' ? prefix : !prefix;
  }
  const order = compare(version.release, clause.release) || (version.pre ? -1 : 0);
  switch (clause.op) {
    case '==':
      return order === 0;
    case '!=':
      return order !== 0;
    case '>=':
      return order >= 0;
    case '<=':
      return order <= 0;
    case '>':
      return order > 0;
    case '<':
      return order < 0;
    case '~=':
      // ~=2.1.3 is >=2.1.3 and ==2.1.*: the last number may grow, the ones before it stay.
      return order >= 0 && clause.release.slice(0, -1).every((n, i) => (version.release[i] ?? 0) === n);
  }
}

function compare(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}
