/** `<permissions>` and `<limits>` of a directive's `<metadata>`. */
import type { DirectiveLimits, PermissionTag } from './types.js';
import { didYouMeanSuffix } from './validation-error.js';
import type { XmlElement } from './xml-tree.js';

/** A problem found at an element; the caller turns it into a positioned issue. */
export interface ElementProblem {
  element: XmlElement;
  field: string;
  text: string;
}

const PERMISSION_KINDS = ['read', 'write', 'execute'] as const;
const PERMISSION_ATTRIBUTES = ['resource', 'path', 'id', 'action'];

/** For each resource: the attribute it needs and an example of a correct tag. */
const RESOURCES: Readonly<Record<PermissionTag['kind'], Readonly<Record<string, { needs: 'path' | 'id' | 'action'; example: string }>>>> = {
  read: { filesystem: { needs: 'path', example: '<read resource="filesystem" path="src/**"/>' } },
  write: { filesystem: { needs: 'path', example: '<write resource="filesystem" path="dist/**"/>' } },
  execute: {
    tool: { needs: 'id', example: '<execute resource="tool" id="bash"/>' },
    shell: { needs: 'action', example: '<execute resource="shell" action="git"/>' },
    'kiwi-mcp': { needs: 'action', example: '<execute resource="kiwi-mcp" action="search"/>' },
    spawn: { needs: 'action', example: '<execute resource="spawn" action="thread"/>' },
  },
};

export function parsePermissions(element: XmlElement, problems: ElementProblem[]): PermissionTag[] {
  const tags: PermissionTag[] = [];
  element.children.forEach((tag, index) => {
    const field = `metadata.permissions[${index}]`;
    if (!(PERMISSION_KINDS as readonly string[]).includes(tag.name)) {
      problems.push({
        element: tag,
        field,
        text: `<${tag.name}> is not a permission; write <read .../>, <write .../> or <execute .../>${didYouMeanSuffix(tag.name, PERMISSION_KINDS)}`,
      });
      return;
    }
    const kind = tag.name as PermissionTag['kind'];
    for (const attribute of Object.keys(tag.attrs)) {
      if (!PERMISSION_ATTRIBUTES.includes(attribute)) {
        problems.push({
          element: tag,
          field: `${field}.${attribute}`,
          text: `<${kind}> has no attribute "${attribute}"; use ${PERMISSION_ATTRIBUTES.join(', ')}${didYouMeanSuffix(attribute, PERMISSION_ATTRIBUTES)}`,
        });
      }
    }
    const allowed = RESOURCES[kind];
    const resource = tag.attrs['resource'];
    const spec = resource === undefined ? undefined : allowed[resource];
    if (resource === undefined || spec === undefined) {
      const examples = Object.values(allowed).map((r) => r.example).join(' or ');
      const got = resource === undefined ? 'has no resource' : `resource "${resource}" is not known for <${kind}>`;
      problems.push({
        element: tag,
        field: `${field}.resource`,
        text: `${got}; write ${examples}${resource === undefined ? '' : didYouMeanSuffix(resource, Object.keys(allowed))}`,
      });
      return;
    }
    const value = tag.attrs[spec.needs];
    if (value === undefined || value.trim() === '') {
      problems.push({ element: tag, field: `${field}.${spec.needs}`, text: `needs ${spec.needs}="..."; write ${spec.example}` });
      return;
    }
    const permission: PermissionTag = { kind, resource };
    for (const key of ['path', 'id', 'action'] as const) {
      const v = tag.attrs[key];
      if (v !== undefined) permission[key] = v;
    }
    tags.push(permission);
  });
  return tags;
}

const COUNT_LIMITS = ['turns', 'tokens', 'spawns'] as const;
const LIMIT_ATTRIBUTES = [...COUNT_LIMITS, 'duration', 'spend'];
const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)?$/;
const DURATION_UNIT_SECONDS: Readonly<Record<string, number>> = { ms: 0.001, s: 1, m: 60, h: 3600 };

/**
 * Both forms: attributes (`<limits turns="20" spend="5.00"/>`) and Kiwi's child elements
 * (`<limits><turns>20</turns><spend currency="USD">5.00</spend></limits>`). `duration` is in
 * seconds; `30s`, `5m`, `2h` and `500ms` are accepted. `spend` is in US dollars.
 */
export function parseLimits(element: XmlElement, problems: ElementProblem[]): DirectiveLimits {
  const limits: DirectiveLimits = {};
  const given: { name: string; raw: string; at: XmlElement; form: 'attribute' | 'element' }[] = [
    ...Object.entries(element.attrs).map(([name, raw]) => ({ name, raw, at: element, form: 'attribute' as const })),
    ...element.children.map((c) => ({ name: c.name, raw: c.text, at: c, form: 'element' as const })),
  ];
  const seen = new Set<string>();
  for (const { name, raw, at, form } of given) {
    const field = `metadata.limits.${name}`;
    const value = raw.trim();
    const example = (v: string): string => (form === 'attribute' ? `${name}="${v}"` : `<${name}>${v}</${name}>`);
    if (!LIMIT_ATTRIBUTES.includes(name)) {
      const what = form === 'attribute' ? `no attribute "${name}"` : `no element <${name}>`;
      problems.push({ element: at, field, text: `<limits> has ${what}; use ${LIMIT_ATTRIBUTES.join(', ')}${didYouMeanSuffix(name, LIMIT_ATTRIBUTES)}` });
      continue;
    }
    if (seen.has(name)) {
      problems.push({ element: at, field, text: `${name} is given twice; keep one` });
      continue;
    }
    seen.add(name);
    if ((COUNT_LIMITS as readonly string[]).includes(name)) {
      if (!/^\d+$/.test(value)) {
        problems.push({ element: at, field, text: `${JSON.stringify(raw)} is not a whole number; write e.g. ${example('10')}` });
        continue;
      }
      limits[name as (typeof COUNT_LIMITS)[number]] = Number(value);
    } else if (name === 'duration') {
      const match = DURATION.exec(value);
      if (!match) {
        problems.push({ element: at, field, text: `${JSON.stringify(raw)} is not a duration; write seconds (${example('300')}) or ${example('5m')}` });
        continue;
      }
      limits.duration = Number(match[1]) * (DURATION_UNIT_SECONDS[match[2] ?? 's'] ?? 1);
    } else {
      const currency = form === 'element' ? at.attrs['currency'] : undefined;
      if (currency !== undefined && currency.trim().toUpperCase() !== 'USD') {
        problems.push({ element: at, field, text: `spend is counted in US dollars; write currency="USD" (or leave it out), not ${JSON.stringify(currency)}` });
        continue;
      }
      const amount = value.replace(/^\$/, '');
      if (!/^\d+(?:\.\d+)?$/.test(amount)) {
        problems.push({ element: at, field, text: `${JSON.stringify(raw)} is not an amount; write US dollars, e.g. ${example('2.50')}` });
        continue;
      }
      limits.spend = Number(amount);
    }
  }
  return limits;
}
