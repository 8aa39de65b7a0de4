import { DEMO_MODEL_ID } from '../llm/demo-provider.js';
import type { GatewayConfig } from './gateway-config.js';

/**
 * The model a directive's `<model tier>` maps to (`model_tiers:` in gateway.yaml, then its
 * `default`); with no real upstream, every tier runs on the offline demo model, as every chat does.
 * Undefined: the tier is not mapped.
 */
export function tierModelOf(config: GatewayConfig): (tier: string | undefined) => string | undefined {
  const unmapped = config.upstreams.every((u) => u.kind === 'demo') ? DEMO_MODEL_ID : undefined;
  return (tier) => (tier === undefined ? undefined : config.modelTiers[tier]) ?? config.modelTiers['default'] ?? unmapped;
}
