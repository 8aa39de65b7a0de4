/** Each pattern's expression, made once: the patterns are the configuration's, so few. */
const compiled = new Map<string, RegExp>();
/** More than any configuration holds; past it, patterns are made again each time rather than kept. */
const MAX_COMPILED = 1024;

/** `*` matches any run of characters (slashes and colons included: model ids use both), `?` one. */
export function modelMatches(pattern: string, model: string): boolean {
  if (!isModelGlob(pattern)) return pattern === model;
  let expression = compiled.get(pattern);
  if (expression === undefined) {
    const source = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
    expression = new RegExp(`^${source}$`, 's');
    if (compiled.size < MAX_COMPILED) compiled.set(pattern, expression);
  }
  return expression.test(model);
}

export const isModelGlob = (pattern: string): boolean => /[*?]/.test(pattern);
