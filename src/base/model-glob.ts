/** `*` matches any run of characters (slashes and colons included: model ids use both), `?` one. */
export function modelMatches(pattern: string, model: string): boolean {
  if (!/[*?]/.test(pattern)) return pattern === model;
  const source = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${source}$`, 's').test(model);
}

export const isModelGlob = (pattern: string): boolean => /[*?]/.test(pattern);
