/** `<limits>` of a directive's `<metadata>`. */
import type { ElementProblem } from './directive-permissions.js';
import type { DirectiveLimits } from './types.js';
import { didYouMeanSuffix } from '../base/did-you-mean.js';
import type { XmlElement } from './xml-tree.js';

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
