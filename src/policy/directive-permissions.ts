/**
 * A directive's `<permissions>` tags → permission rules and capability strings, as the table in
 * registry/permission-tags.ts says. The directive's context is a child of the caller's, so a tag
 * can only narrow what the policy already allows; a directive that declares nothing may do nothing.
 * A tag the table refuses (the loader refuses it too) grants nothing and is reported in `ignored`.
 */
import { readPermissionTag, type TagReading } from '../registry/permission-tags.js';
import type { PermissionTag } from '../registry/types.js';
import { childContext, emptyRules, type PermissionContext, type PermissionRules } from './permission-context.js';

export interface IgnoredTag {
  tag: PermissionTag;
  reason: string;
}

export interface TagRules {
  rules: PermissionRules;
  ignored: IgnoredTag[];
}

function read(tag: PermissionTag): TagReading {
  const { kind, resource, path, id, action } = tag;
  return readPermissionTag(kind, { resource, path, id, action });
}

export function rulesFromTags(tags: readonly PermissionTag[]): TagRules {
  const rules = emptyRules();
  const ignored: IgnoredTag[] = [];
  const add = (list: string[], value: string): void => {
    if (!list.includes(value)) list.push(value);
  };
  for (const tag of tags) {
    const reading = read(tag);
    if (!reading.ok) {
      ignored.push({ tag, reason: reading.problems.map((p) => p.reason).join('; ') });
      continue;
    }
    const grant = reading.form.grant(reading.target);
    if (grant.rule === 'commands') {
      if (!rules.commands.some((c) => c.executable === grant.executable)) rules.commands.push({ executable: grant.executable });
    } else if (grant.rule !== 'none') {
      add(rules[grant.rule], grant.glob);
    }
  }
  return { rules, ignored };
}

/** The context a directive runs in: its declared rights, intersected with `parent`'s. */
export function directiveContext(parent: PermissionContext, directiveName: string, tags: readonly PermissionTag[]): { context: PermissionContext; ignored: IgnoredTag[] } {
  const { rules, ignored } = rulesFromTags(tags);
  return { context: childContext(parent, rules, `directive ${directiveName}`), ignored };
}

/** Capability strings of the tags, sorted and without repeats; `fs.write` brings `fs.read`. */
export function capabilities(tags: readonly PermissionTag[]): string[] {
  const out = new Set<string>();
  for (const tag of tags) {
    const reading = read(tag);
    if (reading.ok) for (const c of reading.form.capabilities(reading.target)) out.add(c);
  }
  return [...out].sort();
}

/** A child's capabilities: those it declares that its parent also has. */
export function intersectCapabilities(parent: readonly string[], own: readonly string[]): string[] {
  const allowed = new Set(parent);
  return [...new Set(own)].filter((c) => allowed.has(c)).sort();
}
