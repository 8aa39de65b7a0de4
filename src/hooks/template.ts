/**
 * `${a.b.c}` placeholders in a hook's inputs, filled from the event the hook fired on. Dotted
 * paths only (a number selects a list item: `${arguments.args.0}`), never expressions; own
 * properties only. A placeholder whose path is missing, or that is not a plain path, stays as
 * written, so the receiving directive sees what was not there. Strings go in as they are,
 * anything else as JSON.
 */
import { isPlainObject } from '../base/plain-object.js';
import type { HookEvent } from './hook-event.js';

export const DEFAULT_TEMPLATE_MAX_CHARS = 32 * 1024;

export type TemplateResult = { ok: true; text: string; missing: string[] } | { ok: false; reason: string };

const PLACEHOLDER = /\$\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*)\}/g;

/** Fills every placeholder; `ok: false` (the hook fails closed) when the result would pass `maxChars`. */
export function fillTemplate(template: string, event: HookEvent, maxChars: number = DEFAULT_TEMPLATE_MAX_CHARS): TemplateResult {
  const missing: string[] = [];
  let text = '';
  let copiedTo = 0;
  for (const match of template.matchAll(PLACEHOLDER)) {
    const path = match[1] as string;
    const value = lookup(event, path);
    const filled = value === undefined ? undefined : stringify(value);
    if (filled === undefined) {
      missing.push(path);
      continue;
    }
    text += template.slice(copiedTo, match.index) + filled;
    copiedTo = match.index + match[0].length;
    if (text.length > maxChars) break;
  }
  if (text.length <= maxChars) text += template.slice(copiedTo);
  if (text.length > maxChars) {
    return { ok: false, reason: `the filled input is more than ${maxChars} characters, the most a hook input may be` };
  }
  return { ok: true, text, missing };
}

function lookup(event: HookEvent, path: string): unknown {
  let value: unknown = event;
  for (const key of path.split('.')) {
    if (Array.isArray(value) && /^(?:0|[1-9][0-9]*)$/.test(key)) value = value[Number(key)];
    else if (isPlainObject(value) && Object.hasOwn(value, key)) value = value[key];
    else return undefined;
  }
  return value;
}


/** undefined where the value has no JSON form (a function, a cycle): left as written, like a missing one. */
function stringify(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'bigint') return String(value);
  try {
    return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
  } catch {
    return undefined;
  }
}
