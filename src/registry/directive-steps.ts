/** The steps of a directive's `<process>`, as `execute` shows them and the resolver indexes them. */
import { child, parseXmlTree, type XmlElement } from './xml-tree.js';
import type { Directive } from './types.js';

export interface DirectiveStep {
  name: string;
  description: string;
  action?: string;
}

/**
 * The `<process><step>` elements of the block. The parser validated the block when the registry
 * loaded, so a parse failure here cannot happen for a loaded directive; it yields no steps.
 */
export function directiveSteps(directive: Directive): DirectiveStep[] {
  const tree = parseXmlTree(directive.xml);
  if (!tree.ok) return [];
  const process = child(tree.root, 'process');
  if (process === undefined) return [];
  return process.children
    .filter((element) => element.name === 'step')
    .map((step, index) => {
      const action = textOf(child(step, 'action'));
      return {
        name: step.attrs['name'] ?? `step_${index + 1}`,
        description: textOf(child(step, 'description')) ?? step.text,
        ...(action !== undefined ? { action } : {}),
      };
    });
}

function textOf(element: XmlElement | undefined): string | undefined {
  return element === undefined || element.text === '' ? undefined : element.text;
}
