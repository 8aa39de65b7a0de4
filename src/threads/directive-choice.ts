/** Which directive a thread runs, on which model, within which limits. */
import { KiwiError } from '../base/errors.js';
import type { LoopLimits } from '../loop/loop-limits.js';
import type { Directive } from '../registry/types.js';

/** The directive of that name, or NOT_FOUND naming the ones there are. */
export function findDirective(directives: ReadonlyMap<string, Directive>, name: string): Directive {
  const directive = directives.get(name);
  if (directive !== undefined) return directive;
  const known = [...directives.keys()];
  throw new KiwiError('NOT_FOUND', `no directive ${JSON.stringify(name)}; the directives are ${known.length === 0 ? '(none)' : known.join(', ')}`);
}

/** The model a directive runs on: the one asked for, else its tier's (or `tier`'s); INVALID_INPUT saying how to map it when there is none. */
export function directiveModel(tierModel: (tier: string | undefined) => string | undefined, directive: Directive, asked: { model?: string | undefined; tier?: string | undefined }): string {
  const tier = asked.tier ?? directive.modelTier;
  const model = asked.model ?? tierModel(tier);
  if (model !== undefined) return model;
  const named = tier ?? 'default';
  throw new KiwiError('INVALID_INPUT', `directive ${directive.name} asks for the model tier ${JSON.stringify(named)}, which .ai/config/gateway.yaml does not map; add model_tiers: { ${named}: MODEL }, or pass --model`);
}

/** The directive's `<limits>` over the gateway's: turns, tokens and duration it sets replace those. */
export function threadLimits(base: LoopLimits, directive: Directive): LoopLimits {
  const l = directive.limits;
  return {
    ...base,
    ...(l.turns === undefined ? {} : { maxTurns: l.turns }),
    ...(l.tokens === undefined ? {} : { maxTokens: l.tokens }),
    ...(l.duration === undefined ? {} : { maxDurationMs: Math.max(1000, Math.round(l.duration * 1000)) }),
  };
}
