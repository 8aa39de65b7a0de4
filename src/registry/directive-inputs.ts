/**
 * A directive's `<inputs>`, in either form, into the same `DirectiveInput[]`:
 * - Kiwi MCP's `<input name="topic" type="string" required="true">What to research</input>`;
 * - Kiwi's child elements named after the input: `<topic type="string" required="true">What to research</topic>`.
 * An element named `input` is always the first form, so an input called "input" is written
 * `<input name="input" ...>`.
 */
import type { ElementProblem } from './directive-permissions.js';
import { isParameterType, PARAMETER_TYPES } from './tool-parameters.js';
import type { DirectiveInput, ParameterType } from './types.js';
import { didYouMeanSuffix } from '../base/did-you-mean.js';
import type { XmlElement } from './xml-tree.js';

/** A tool parameter's types (JSON Schema's: the call's arguments are JSON), listed in messages with object before array. */
const LISTED_TYPES: readonly ParameterType[] = [...PARAMETER_TYPES.filter((t) => t !== 'array'), 'array'];

const INPUT_NAME = /^[A-Za-z_][A-Za-z0-9_-]*$/u;

export function parseInputs(element: XmlElement, problems: ElementProblem[]): DirectiveInput[] {
  const inputs: DirectiveInput[] = [];
  const seen = new Set<string>();
  element.children.forEach((input, index) => {
    const field = `inputs[${index}]`;
    const report = (suffix: string, text: string) => problems.push({ element: input, field: suffix === '' ? field : `${field}.${suffix}`, text });
    const attributeForm = input.name === 'input';
    const name = attributeForm ? input.attrs['name'] : input.name;
    const example = attributeForm ? '<input name="topic" type="string" required="true">What to research</input>' : `<${input.name} type="string" required="true">What it is</${input.name}>`;
    if (name === undefined || name.trim() === '') {
      report('name', `the input has no name; write ${example} (or <topic type="string" required="true">What to research</topic>)`);
      return;
    }
    if (!INPUT_NAME.test(name)) {
      report('name', `${JSON.stringify(name)} is not an input name; use letters, digits, _ and -, starting with a letter or _`);
      return;
    }
    if (seen.has(name)) {
      report('name', `input "${name}" is declared twice; keep one`);
      return;
    }
    seen.add(name);
    if (input.children.length > 0) {
      report('', `input "${name}" holds <${input.children[0]?.name}>; its description is plain text: write ${example}`);
    }
    const type = input.attrs['type']?.trim() ?? 'string';
    if (!isParameterType(type)) {
      report('type', `input "${name}": ${JSON.stringify(type)} is not a type; use ${LISTED_TYPES.join(', ')}${didYouMeanSuffix(type, LISTED_TYPES)}`);
    }
    const required = input.attrs['required']?.trim();
    if (required !== undefined && required !== 'true' && required !== 'false') {
      report('required', `input "${name}": ${JSON.stringify(required)} is not a boolean; write required="true" or required="false"`);
    }
    // An input of another type is reported above, and a reported problem refuses the whole directive.
    if (isParameterType(type)) inputs.push({ name, type, required: required === 'true', description: input.text });
  });
  return inputs;
}
