/** `<permissions>` of a directive's `<metadata>`, read through the one table in permission-tags.ts. */
import { readPermissionTag } from './permission-tags.js';
import type { PermissionTag } from './types.js';
import type { XmlElement } from './xml-tree.js';

/** A problem found at an element; the caller turns it into a positioned issue. */
export interface ElementProblem {
  element: XmlElement;
  field: string;
  text: string;
}

/** Every tag that loads; each one that does not is reported and kept out. */
export function parsePermissions(element: XmlElement, problems: ElementProblem[]): PermissionTag[] {
  const tags: PermissionTag[] = [];
  element.children.forEach((tag, index) => {
    const field = `metadata.permissions[${index}]`;
    const reading = readPermissionTag(tag.name, tag.attrs);
    if (reading.ok) {
      tags.push(reading.tag);
      return;
    }
    for (const p of reading.problems) {
      problems.push({ element: tag, field: p.attribute === undefined ? field : `${field}.${p.attribute}`, text: p.reason });
    }
  });
  return tags;
}
