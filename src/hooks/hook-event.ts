/**
 * What a hook's condition and input templates see: one JSON-like object per tool call or
 * directive event. Numbers are CEL doubles (as CEL reads JSON), so `cost.turns > limits.turns * 0.9`
 * works and arithmetic with a literal needs a double (`cost.turns + 1.0`); comparisons mix
 * freely (`cost.turns > 18`).
 */

/** The variables a condition may name, in the order the design lists them. */
export const HOOK_EVENT_FIELDS = ['event', 'tool', 'arguments', 'client', 'directive', 'cost', 'limits', 'permissions'] as const;

export type HookEventField = (typeof HOOK_EVENT_FIELDS)[number];

export interface HookEvent {
  /** What happened: `name` (`error`, `tool_call`, …), a `code` (`timeout`, `permission_denied`, …), `detail`. */
  event: { name: string; code?: string; detail?: unknown; [key: string]: unknown };
  tool: Record<string, unknown>;
  arguments: Record<string, unknown>;
  client: Record<string, unknown>;
  directive: Record<string, unknown>;
  cost: Record<string, unknown>;
  limits: Record<string, unknown>;
  permissions: Record<string, unknown>;
}

/**
 * The event with the fields every event has, even when empty (`event.code` "", `event.detail`
 * {}): CEL makes a missing key an error, and a hook that errs fails closed, so
 * `event.code == "timeout"` must be able to read a call that has no code.
 */
export function withEventDefaults(event: HookEvent): HookEvent {
  if (event.event.code !== undefined && event.event.detail !== undefined) return event;
  return { ...event, event: { ...event.event, code: event.event.code ?? '', detail: event.event.detail ?? {} } };
}
