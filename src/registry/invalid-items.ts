import path from 'node:path';
import type { RegistryIssue } from './types.js';

/**
 * What people are told of items that did not load: an invalid file is left out of the registry, so
 * without these its id reads as "no tool" and a count says "1 invalid" without saying which.
 */

/** The problems of the file named for `id` (`<id>.yaml`, `<id>.md`): a name that is not loaded may be one whose file is invalid. */
export function issuesOfItem(issues: readonly RegistryIssue[], id: string): RegistryIssue[] {
  return issues.filter((i) => path.basename(i.file).replace(/\.(ya?ml|md)$/u, '') === id);
}

/** One line per problem, at most `max`, then how many more and where to see them. */
export function invalidItemLines(issues: readonly RegistryIssue[], max = 5): string[] {
  const lines = issues.slice(0, max).map((i) => `not loaded, invalid: ${i.message}`);
  if (issues.length > max) lines.push(`… and ${issues.length - max} more: run \`kiwi tools validate\``);
  return lines;
}
