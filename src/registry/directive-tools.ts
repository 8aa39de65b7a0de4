/**
 * A directive's `<tools>` in its `<metadata>`: the tools its thread may call. Kiwi wrote tool names
 * as `<tool>search</tool>` inside its steps' `<tool_call>`s; the list reads the same, and
 * `<tool id="…"/>` too. It narrows `<permissions>`, never widens them: a call must pass both.
 * A name is a tool id of the registry, an MCP server's id (every tool of that server), or
 * `server.tool`; the remote tool of that last form is checked when it is called, since the
 * server's tools are not known until it is connected.
 */
import { didYouMeanSuffix } from '../base/did-you-mean.js';
import type { ElementProblem } from './directive-permissions.js';
import { checkToolName } from './tool-name.js';
import type { Directive, DirectiveToolName, RegistryIssue, Tool } from './types.js';
import type { XmlElement } from './xml-tree.js';

const FORM = 'write each tool as <tool>tool_id</tool> or <tool id="tool_id"/> inside <tools>';

export function parseToolsTag(element: XmlElement, problems: ElementProblem[], siteOf: (element: XmlElement) => { site: string; line: number }): DirectiveToolName[] {
  const names: DirectiveToolName[] = [];
  const problem = (at: XmlElement, text: string): void => {
    problems.push({ element: at, field: 'metadata.tools', text });
  };
  if (Object.keys(element.attrs).length > 0) problem(element, `<tools> takes no attributes; ${FORM}`);
  if (element.text !== '') problem(element, `<tools> holds text ${JSON.stringify(element.text.slice(0, 60))}; ${FORM}`);
  for (const tag of element.children) {
    if (tag.name !== 'tool') {
      problem(tag, `<tools> holds <${tag.name}>; ${FORM}`);
      continue;
    }
    const id = tag.attrs['id']?.trim();
    const others = Object.keys(tag.attrs).filter((a) => a !== 'id');
    if (others.length > 0) problem(tag, `<tool> has no attribute ${JSON.stringify(others[0])}; ${FORM}`);
    if (id !== undefined && tag.text !== '' && id !== tag.text) {
      problem(tag, `<tool id="${id}"> holds the different name ${JSON.stringify(tag.text)}; give the name once`);
      continue;
    }
    const name = id ?? tag.text;
    if (name === '') {
      problem(tag, `a <tool> names no tool; ${FORM}`);
      continue;
    }
    const check = checkToolName(name);
    if (!check.ok) {
      problem(tag, `<tool>${name.slice(0, 60)}</tool>: ${check.reason}`);
      continue;
    }
    if (names.some((n) => n.name === name)) {
      problem(tag, `the tool ${JSON.stringify(name)} is named twice; keep one`);
      continue;
    }
    names.push({ name, ...siteOf(tag) });
  }
  return names;
}

/**
 * Names of `<tools>` the registry does not hold, as load errors; primitives and runtimes run other
 * tools and cannot be called, so naming one is an error too.
 */
export function unknownToolNames(directive: Directive, tools: ReadonlyMap<string, Tool>): RegistryIssue[] {
  const issues: RegistryIssue[] = [];
  for (const { name, site, line } of directive.tools ?? []) {
    const problem = toolNameProblem(name, tools);
    if (problem === undefined) continue;
    issues.push({ file: directive.source.path, kind: 'directive', field: 'metadata.tools', line, message: `${site}: metadata.tools: ${problem} (directive ${directive.name} is not loaded until then)` });
  }
  return issues;
}

function toolNameProblem(name: string, tools: ReadonlyMap<string, Tool>): string | undefined {
  const tool = tools.get(name);
  if (tool !== undefined) {
    return tool.type === 'primitive' || tool.type === 'runtime' ? `${JSON.stringify(name)} is a ${tool.type}, which runs other tools and cannot be called; name the tools that run on it` : undefined;
  }
  const dot = name.indexOf('.');
  if (dot > 0 && tools.get(name.slice(0, dot))?.type === 'mcp_server') return undefined;
  return `no tool ${JSON.stringify(name)} in the registry${didYouMeanSuffix(name, [...tools.keys()])}; name a tool id of .ai/tools/, an MCP server's id, or "server.tool" (run \`kiwi tools list\`)`;
}

/**
 * Why `<tools>` refuses a call, or undefined when it allows it (or the directive has no `<tools>`).
 * `server` is the MCP server of a call to one of its tools (`server.tool`), which naming the
 * server allows.
 */
export function toolsTagRefusal(directive: { name: string; tools?: readonly string[] } | undefined, id: string, server?: string): string | undefined {
  if (directive?.tools === undefined) return undefined;
  const named = directive.tools;
  if (named.includes(id) || (server !== undefined && named.includes(server))) return undefined;
  const list = named.length === 0 ? 'it names none' : `it names ${named.map((n) => `\`${n}\``).join(', ')}`;
  return `denied by directive ${directive.name}'s <tools>: \`${id}\` is not named there (${list}); add <tool>${id}</tool> to its <tools> to let its thread call it`;
}
