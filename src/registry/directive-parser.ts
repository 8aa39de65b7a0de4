/**
 * Directives: Markdown with one `<directive name version>` XML block. Only the block has to be
 * well-formed XML; the Markdown around it may hold anything.
 */
import { parseHooks } from './directive-hooks.js';
import { parseInputs } from './directive-inputs.js';
import { parseLimits } from './directive-limits.js';
import { parsePermissions, type ElementProblem } from './directive-permissions.js';
import { parseToolsTag } from './directive-tools.js';
import { extractDirectiveBlock, findSignature, lineColumn, stripSignatureLine } from './markdown-parts.js';
import { verifySignature } from './signature.js';
import { checkToolName } from './tool-name.js';
import type { Directive, DirectiveLimits, DirectiveToolName, PermissionTag, Tier } from './types.js';
import type { DirectiveHook } from '../hooks/hook-types.js';
import { fail, makeIssue, type FileLabel, type IssueInput, type ParseResult } from './validation-error.js';
import { child, parseXmlTree, type XmlElement } from './xml-tree.js';

const EXAMPLE_OPENING = '<directive name="my_directive" version="1.0.0">';
/** Kiwi MCP wrote `<model tier>`; later files `<model_class tier>`. Both are read. */
const MODEL_TAGS = ['model', 'model_class'];

export function parseDirective(text: string, label: FileLabel, tier: Tier): ParseResult<Directive> {
  const toIssue = (input: IssueInput) => makeIssue('directive', label, input);
  const { text: content, removedLines } = stripSignatureLine('directive', text);
  const block = extractDirectiveBlock(content);
  if (block === null) {
    return fail([
      toIssue({
        text: `no directive block found; add ${EXAMPLE_OPENING} <metadata>...</metadata> </directive> (the Markdown around it may contain anything)`,
      }),
    ]);
  }
  const at = (offsetInBlock: number) => {
    const pos = lineColumn(content, block.offset + offsetInBlock);
    return { line: pos.line + removedLines, column: pos.column };
  };

  const tree = parseXmlTree(block.xml);
  if (!tree.ok) {
    const start = at(0);
    return fail([
      toIssue({
        line: start.line + tree.line - 1,
        column: tree.line === 1 ? start.column + tree.column - 1 : tree.column,
        text: `the <directive> block is not well-formed XML: ${tree.message} (the block runs from the first "<directive" at line ${start.line} to the last "</directive>")`,
      }),
    ]);
  }
  const root = tree.root;
  const problems: ElementProblem[] = [];
  const problem = (element: XmlElement, field: string, message: string) => problems.push({ element, field, text: message });

  if (root.name !== 'directive') {
    problem(root, '', `the block starts with <${root.name}>; a directive starts with ${EXAMPLE_OPENING}`);
  }
  const name = root.attrs['name'];
  if (name === undefined || name === '') {
    problem(root, 'name', `the <directive> tag has no name; write ${EXAMPLE_OPENING}`);
  } else {
    const check = checkToolName(name);
    if (!check.ok) problem(root, 'name', check.reason);
  }
  const version = root.attrs['version'];
  if (version === undefined || version === '') {
    problem(root, 'version', `the <directive> tag has no version; write ${EXAMPLE_OPENING}`);
  }

  for (const misplaced of ['permissions', 'limits', 'tools']) {
    const element = child(root, misplaced);
    if (element !== undefined) problem(element, misplaced, `<${misplaced}> belongs inside <metadata>; move it there`);
  }

  let description = '';
  let category: string | undefined;
  let modelTier: string | undefined;
  let limits: DirectiveLimits = {};
  let permissions: PermissionTag[] = [];
  let hooks: DirectiveHook[] = [];
  let tools: DirectiveToolName[] | undefined;
  const metadata = child(root, 'metadata');
  if (metadata === undefined) {
    problem(root, 'metadata', 'missing; add <metadata><description>What this directive does</description></metadata>');
  } else {
    const describe = child(metadata, 'description');
    description = describe?.text ?? '';
    if (description === '') {
      problem(describe ?? metadata, 'metadata.description', 'missing or empty; add <description>What this directive does</description>');
    }
    category = textOf(child(metadata, 'category'));
    modelTier = readModelTier(metadata, problem);
    const limitsElement = child(metadata, 'limits');
    if (limitsElement !== undefined) limits = parseLimits(limitsElement, problems);
    const permissionsElement = child(metadata, 'permissions');
    if (permissionsElement !== undefined) permissions = parsePermissions(permissionsElement, problems);
    const hooksElement = child(metadata, 'hooks');
    // A condition starts right after its `<when>` tag.
    const siteOf = (element: XmlElement) => {
      const pos = at(element.offset);
      return { file: label.display, line: pos.line, column: pos.column + '<when>'.length };
    };
    if (hooksElement !== undefined) hooks = parseHooks(hooksElement, problems, siteOf);
    const toolsElement = child(metadata, 'tools');
    const toolSite = (element: XmlElement) => {
      const pos = at(element.offset);
      return { site: `${label.display}:${pos.line}:${pos.column}`, line: pos.line };
    };
    if (toolsElement !== undefined) tools = parseToolsTag(toolsElement, problems, toolSite);
  }
  const inputsElement = child(root, 'inputs');
  const inputs = inputsElement === undefined ? [] : parseInputs(inputsElement, problems);

  const issues = problems.map((p) => {
    const input: IssueInput = { ...at(p.element.offset), text: p.text };
    if (p.field !== '') input.field = p.field;
    return toIssue(input);
  });
  const signature = verifySignature('directive', text);
  if (signature.status === 'invalid') {
    issues.push(
      toIssue({ line: 1, column: 1, text: 'signature does not match the content; run `kiwi sign <file>` after reviewing the change' }),
    );
  }
  if (issues.length > 0) return fail(issues);

  const directive: Directive = {
    name: name ?? '',
    version: version ?? '',
    description,
    limits,
    permissions,
    inputs,
    ...(hooks.length === 0 ? {} : { hooks }),
    ...(tools === undefined ? {} : { tools }),
    xml: block.xml,
    body: content,
    signature: findSignature('directive', text),
    source: { path: label.file, tier },
  };
  if (category !== undefined) directive.category = category;
  if (modelTier !== undefined) directive.modelTier = modelTier;
  return { ok: true, value: directive };
}

type Report = (element: XmlElement, field: string, message: string) => void;

function textOf(element: XmlElement | undefined): string | undefined {
  if (element === undefined || element.text === '') return undefined;
  return element.text;
}

function readModelTier(metadata: XmlElement, problem: Report): string | undefined {
  for (const tag of MODEL_TAGS) {
    const element = child(metadata, tag);
    if (element === undefined) continue;
    const tier = element.attrs['tier']?.trim();
    if (tier === undefined || tier === '') {
      problem(element, `metadata.${tag}.tier`, `<${tag}> needs a tier; write <${tag} tier="balanced"/> (fast, balanced, general, reasoning, expert or orchestrator)`);
      return undefined;
    }
    return tier;
  }
  return undefined;
}
