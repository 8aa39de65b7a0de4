import { isKiwiError } from '../errors.js';
import { createConditionCompiler, type ConditionCompiler, type ConditionSite } from '../hooks/condition.js';
import type { DirectiveHook, HookAction } from '../hooks/hook-types.js';
import type { ElementProblem } from './directive-permissions.js';
import type { XmlElement } from './xml-tree.js';

/**
 * `<hooks>` of a directive's `<metadata>`: each `<hook>` has a `<when>` condition (CEL, or Kiwi's
 * `and`/`or`/`not`), checked here so a mistake is reported with the file's line, and one action:
 * `<directive>NAME</directive>` with optional `<inputs>` (`${…}` templates filled from the event
 * when it fires), `<deny>why</deny>`, `<require_approval/>` or `<annotate>text</annotate>`.
 */

const MAX_HOOKS = 100;
const ACTIONS = ['directive', 'deny', 'require_approval', 'annotate'] as const;

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
    const action = readAction(actions[0] as XmlElement, tag.children.find((c) => c.name === 'inputs'), field, problems);
    if (action !== undefined) hooks.push({ when: when.text, line: site.line, action });
  });
  return hooks;
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
      return { kind: 'directive', name: tag.text, inputs: values };
    }
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
