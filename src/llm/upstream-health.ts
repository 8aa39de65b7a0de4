/**
 * What the gateway knows of each upstream's health: up once it answered, down once it refused a
 * connection, timed out or answered 5xx/429 before its first byte (or failed its periodic check),
 * unknown before either. A down upstream is passed over by failover (failover-provider.ts) for
 * `coolDownMs`; after that the next request tries it again, and its answer decides. In this process
 * only: each replica learns of an upstream that is down from its own first failure, which costs
 * that request one refused connection (or 5xx) and nothing more.
 */

export type UpstreamStateName = 'up' | 'down' | 'unknown';

export interface UpstreamState {
  name: string;
  state: UpstreamStateName;
  /** When it entered this state (ms since the epoch); absent while unknown. */
  since?: number;
  /** Why it is down. */
  error?: string;
}

export interface UpstreamHealth {
  /** Whether a request should try it before the others: not down, or down for longer than the cool-down. */
  usable(name: string): boolean;
  up(name: string): void;
  down(name: string, why: string): void;
  /** One upstream's state; undefined for a name it was not told of. */
  state(name: string): UpstreamState | undefined;
  /** Each upstream it was told of, in the order given at creation. */
  states(): UpstreamState[];
}

export const DEFAULT_COOL_DOWN_MS = 30_000;

export function createUpstreamHealth(names: readonly string[], options: { now?: () => number; coolDownMs?: number } = {}): UpstreamHealth {
  const now = options.now ?? Date.now;
  const coolDownMs = options.coolDownMs ?? DEFAULT_COOL_DOWN_MS;
  const states = new Map<string, UpstreamState>(names.map((name) => [name, { name, state: 'unknown' }]));
  const set = (name: string, state: UpstreamStateName, error?: string): void => {
    const was = states.get(name);
    if (was === undefined) return;
    // `since` stays while the state does, so a second failure does not restart the cool-down's clock for the console.
    const since = was.state === state && was.since !== undefined ? was.since : now();
    states.set(name, { name, state, since, ...(error === undefined ? {} : { error }) });
  };
  return {
    usable(name) {
      const s = states.get(name);
      return s === undefined || s.state !== 'down' || now() - (s.since ?? 0) >= coolDownMs;
    },
    up: (name) => set(name, 'up'),
    down(name, why) {
      // A failure after the cool-down starts a new one.
      const s = states.get(name);
      if (s?.state === 'down' && now() - (s.since ?? 0) >= coolDownMs) states.set(name, { name, state: 'down', since: now(), error: why });
      else set(name, 'down', why);
    },
    state: (name) => {
      const s = states.get(name);
      return s === undefined ? undefined : { ...s };
    },
    states: () => [...states.values()].map((s) => ({ ...s })),
  };
}
