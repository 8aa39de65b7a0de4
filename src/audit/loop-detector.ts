import { createHash } from 'node:crypto';
import { canonicalJson } from '../base/canonical-json.js';
import { KiwiError } from '../base/errors.js';

export interface LoopDetectorOptions {
  /** Identical calls within the window at which a session counts as stuck. Default 3. */
  threshold?: number;
  /** Default 60 s. */
  windowMs?: number;
  now?: () => Date;
  /** Sessions remembered at once; the least recently active are forgotten first. Default 1024. */
  maxSessions?: number;
  /** Distinct calls remembered per session; the least recently made are forgotten first. Default 256. */
  maxCallsPerSession?: number;
}

export interface LoopObservation {
  stuck: boolean;
  /** Identical calls in the window, this one included (saturates at 1024). */
  count: number;
}

/** Counts per scope (the proxy passes the client and the session); here, or in Redis when replicas share it (shared-state/redis-loop-detector.ts). */
export interface LoopDetector {
  observe(sessionId: string, toolId: string, args: unknown): Promise<LoopObservation>;
}

export interface MemoryLoopDetector extends LoopDetector {
  stats(): { sessions: number; calls: number };
}

interface SessionCalls {
  lastSeen: number;
  /** Call key → times it was made, oldest first; Map order is least recently made first. */
  calls: Map<string, number[]>;
}

/** Most stamps kept per call, and so the highest count. */
export const MAX_LOOP_STAMPS = 1024;
export const DEFAULT_LOOP_THRESHOLD = 3;
export const DEFAULT_LOOP_WINDOW_MS = 60_000;

/**
 * Counts identical calls (same tool, same arguments up to key order) per session within a
 * sliding window, so an agent repeating itself can be flagged before it burns its budget.
 */
export function createLoopDetector(options: LoopDetectorOptions = {}): MemoryLoopDetector {
  const threshold = checkInt('threshold', options.threshold ?? DEFAULT_LOOP_THRESHOLD, 1, MAX_LOOP_STAMPS);
  const windowMs = checkInt('windowMs', options.windowMs ?? DEFAULT_LOOP_WINDOW_MS, 1, 7 * 24 * 3_600_000);
  const maxSessions = checkInt('maxSessions', options.maxSessions ?? 1024, 1, 1_000_000);
  const maxCalls = checkInt('maxCallsPerSession', options.maxCallsPerSession ?? 256, 1, 1_000_000);
  const now = options.now ?? (() => new Date());
  // Map order doubles as recency order: entries are re-inserted on every touch.
  const sessions = new Map<string, SessionCalls>();

  function dropStale(cutoff: number): void {
    for (const [id, session] of sessions) {
      if (session.lastSeen > cutoff) break;
      sessions.delete(id);
    }
  }

  return {
    async observe(sessionId, toolId, args) {
      const key = loopCallKey(sessionId, toolId, args);
      // Arguments that cannot be serialised cannot be compared; never call them a loop.
      if (key === undefined) return { stuck: false, count: 1 };
      const t = now().getTime();
      const cutoff = t - windowMs;
      dropStale(cutoff);

      const session = sessions.get(sessionId) ?? { lastSeen: t, calls: new Map<string, number[]>() };
      sessions.delete(sessionId);
      sessions.set(sessionId, session);
      session.lastSeen = t;
      for (const id of sessions.keys()) {
        if (sessions.size <= maxSessions) break;
        sessions.delete(id);
      }

      const stamps = (session.calls.get(key) ?? []).filter((stamp) => stamp > cutoff);
      stamps.push(t);
      if (stamps.length > MAX_LOOP_STAMPS) stamps.splice(0, stamps.length - MAX_LOOP_STAMPS);
      session.calls.delete(key);
      session.calls.set(key, stamps);
      for (const [k, times] of session.calls) {
        const newest = times[times.length - 1] ?? -Infinity;
        if (session.calls.size <= maxCalls && newest > cutoff) break;
        session.calls.delete(k);
      }
      return { stuck: stamps.length >= threshold, count: stamps.length };
    },
    stats() {
      let calls = 0;
      for (const session of sessions.values()) calls += session.calls.size;
      return { sessions: sessions.size, calls };
    },
  };
}

/**
 * A fixed-size key for the call, so huge arguments do not make the detector's memory grow;
 * undefined for arguments that cannot be serialised (they cannot be compared: never a loop).
 */
export function loopCallKey(sessionId: string, toolId: string, args: unknown): string | undefined {
  if (typeof sessionId !== 'string' || typeof toolId !== 'string') {
    throw new KiwiError('INVALID_INPUT', 'loop detector needs a session id and a tool id as strings');
  }
  let json: string;
  try {
    json = canonicalJson([toolId, args]);
  } catch {
    return undefined;
  }
  return createHash('sha256').update(json).digest('base64');
}

function checkInt(name: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new KiwiError('INVALID_INPUT', `loop detector option ${name} is ${String(value)}: use an integer from ${min} to ${max}`);
  }
  return value;
}
