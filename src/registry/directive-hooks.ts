import { isKiwiError } from '../base/errors.js';
import { createConditionCompiler, type ConditionCompiler, type ConditionSite } from '../hooks/condition.js';
import { DEFAULT_STEER_TIMEOUT_MS, MAX_RETRIES, type DirectiveHook, type HookAction } from '../hooks/hook-types.js';
import type { ElementProblem } from './directive-permissions.js';
import type { XmlElement } from './xml-tree.js';

/**
 * `<hooks>` of a directive's `<metadata>`: each `<hook>` has a `<when>` condition (CEL, or Kiwi's
 * `and`/`or`/`not`), checked here so a mistake is reported with the file's line, and one action:
 * `<directive>NAME</directive>` with optional `<inputs>` (`${…}` templates filled from the event
 * when it fires; `steer="true"` with optional `timeout_s` and `retries`: its thread's answer decides
 * the call), `<deny>why</deny>`, `<require_approval/>`, `<annotate>text</annotate>`, or a
 * steering decision: `<retry max="2"/>`, `<skip>why</skip>`, `<fail>why</fail>`,
 * `<abort>why</abort>`, `<continue/>`. `<hook fallthrough="true">` lets the hooks after it act too.
 */

const MAX_HOOKS = 100;
const ACTIONS = ['directive', 'deny', 'require_approval', 'annotate', 'retry', 'skip', 'fail', 'abort', 'continue'] as const;

let compiler: ConditionCompiler | undefined;

export function parseHooks(element: XmlElement, problems: ElementProblem[], siteOf: (element: XmlElement) => ConditionSite): DirectiveHook[] {
  const hooks: DirectiveHook[] = [];
  const tags = element.children;
  if (tags.length > MAX_HOOKS) {
    problems.push({ element, field: 'metadata.hooks', text: `${tags.length} hooks, more than the ${MAX_HOOKS} allowed` });
    return hooks;
  }
  tags.forEach((tag, i) => {
    const field = `metadata.hooks[${i}]`;
    if (tag.name !== 'hook') {
      problems.push({ element: tag, field, text: `<hooks> holds <hook> elements, not <${tag.name}>` });
      return;
    }
    const when = tag.children.find((c) => c.name === 'when');
    if (when === undefined || when.text === '') {
      problems.push({ element: tag, field: `${field}.when`, text: 'the hook has no condition; add <when>event.name == "error"</when>' });
      return;
    }
    const site = siteOf(when);
    try {
      compiler ??= createConditionCompiler();
      compiler.compileCondition(when.text, site);
    } catch (error) {
      if (!isKiwiError(error)) throw error;
      problems.push({ element: when, field: `${field}.when`, text: withoutFile(error.message, site) });
      return;
    }
    const actions = tag.children.filter((c) => (ACTIONS as readonly string[]).includes(c.name));
    const unknown = tag.children.filter((c) => c.name !== 'when' && c.name !== 'inputs' && !(ACTIONS as readonly string[]).includes(c.name));
    for (const u of unknown) problems.push({ element: u, field: `${field}.${u.name}`, text: `a hook has no <${u.name}>; its action is one of ${ACTIONS.map((a) => `<${a}>`).join(', ')}` });
    if (actions.length !== 1) {
      problems.push({ element: tag, field, text: `a hook has exactly one action (${ACTIONS.map((a) => `<${a}>`).join(', ')}); this one has ${actions.length}` });
      return;
    }
    const fallthrough = tag.attrs['fallthrough'];
    if (fallthrough !== undefined && fallthrough !== 'true' && fallthrough !== 'false') {
      problems.push({ element: tag, field: `${field}.fallthrough`, text: `fallthrough is "true" or "false", not ${JSON.stringify(fallthrough)}` });
      return;
    }
    const action = readAction(actions[0] as XmlElement, tag.children.find((c) => c.name === 'inputs'), field, problems);
    if (action !== undefined) hooks.push({ when: when.text, line: site.line, action, ...(fallthrough === 'true' ? { fallthrough: true } : {}) });
  });
  return hooks;
}

/** `steer="true"` with its `timeout_s` and `retries`; undefined when not steering, null when an attribute is wrong (reported). */
function readSteer(tag: XmlElement, field: string, problems: ElementProblem[]): { timeoutMs: number; retries: number } | undefined | null {
  const { steer, timeout_s: timeout, retries } = tag.attrs;
  if (steer !== 'true') {
    if (steer === undefined || steer === 'false') {
      if (timeout === undefined && retries === undefined) return undefined;
      problems.push({ element: tag, field, text: 'timeout_s and retries go with steer="true" only' });
    } else problems.push({ element: tag, field, text: `steer is "true" or "false", not ${JSON.stringify(steer)}` });
    return null;
  }
  const seconds = whole(timeout ?? String(DEFAULT_STEER_TIMEOUT_MS / 1000), 1, 600);
  const times = whole(retries ?? '1', 1, MAX_RETRIES);
  if (seconds === undefined) problems.push({ element: tag, field, text: 'timeout_s is a whole number of seconds from 1 to 600' });
  if (times === undefined) problems.push({ element: tag, field, text: `retries is a whole number from 1 to ${MAX_RETRIES}` });
  return seconds === undefined || times === undefined ? null : { timeoutMs: seconds * 1000, retries: times };
}

function whole(text: string, min: number, max: number): number | undefined {
  if (!/^\d{1,6}$/.test(text)) return undefined;
  const n = Number(text);
  return n >= min && n <= max ? n : undefined;
}

/** The compiler's `file:line:column: ` made `column N: ` (`line L, column N: ` on another line): the issue names the file and line already. */
function withoutFile(message: string, site: ConditionSite): string {
  const prefix = `${site.file}:`;
  if (!message.startsWith(prefix)) return message;
  const match = /^(\d+):(\d+): /.exec(message.slice(prefix.length));
  if (match === null) return message;
  const where = Number(match[1]) === site.line ? `column ${match[2]}` : `line ${match[1]}, column ${match[2]}`;
  return `${where}: ${message.slice(prefix.length + match[0].length)}`;
}

function readAction(tag: XmlElement, inputs: XmlElement | undefined, field: string, problems: ElementProblem[]): HookAction | undefined {
  if (inputs !== undefined && tag.name !== 'directive') {
    problems.push({ element: inputs, field: `${field}.inputs`, text: '<inputs> go with a <directive> action only' });
    return undefined;
  }
  switch (tag.name) {
    case 'directive': {
      if (tag.text === '') {
        problems.push({ element: tag, field: `${field}.directive`, text: 'name the directive to run: <directive>handle_timeout</directive>' });
        return undefined;
      }
      const values = Object.fromEntries((inputs?.children ?? []).map((c) => [c.name, c.text]));
      const steer = readSteer(tag, `${field}.directive`, problems);
      if (steer === null) return undefined;
      return { kind: 'directive', name: tag.text, inputs: values, ...(steer ? { steer } : {}) };
    }
    case 'retry': {
      const max = whole(tag.attrs['max'] ?? '1', 1, MAX_RETRIES);
      if (max === undefined) problems.push({ element: tag, field: `${field}.retry`, text: `max is a whole number from 1 to ${MAX_RETRIES}: <retry max="2"/>` });
      return max === undefined ? undefined : { kind: 'steer', decision: 'retry', max };
    }
    case 'skip':
    case 'fail':
    case 'abort':
      return { kind: 'steer', decision: tag.name, reason: tag.text === '' ? `${tag.name} by a hook` : tag.text };
    case 'continue':
      return { kind: 'steer', decision: 'continue' };
    case 'deny':
      return { kind: 'deny', reason: tag.text === '' ? 'denied by a hook' : tag.text };
    case 'require_approval':
      return { kind: 'require_approval' };
    default:
      if (tag.text === '') {
        problems.push({ element: tag, field: `${field}.annotate`, text: 'write the note to add to the audit record: <annotate>deploy touched prod</annotate>' });
        return undefined;
      }
      return { kind: 'annotate', text: tag.text };
  }
}
