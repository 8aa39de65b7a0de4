import type { PushChannel } from './agent-hub.js';

/**
 * The runner connections this kernel instance holds (§7.1, §13): each with the exact tool ids
 * it can run, and at most one job at a time. A job goes round-robin, per tool, to an idle
 * connection that has the tool.
 */

export interface RunnerConnection {
  /** The client of the key that opened it, whose runner id it is. */
  client: string;
  runnerId: string;
  consumerId: string;
  channel: PushChannel;
  capabilities: Set<string>;
  /** The job it runs now, if any. */
  job?: string;
}

export interface RunnerHub {
  /** Registers `connection`; returns the one it replaced, if any. */
  add(connection: RunnerConnection): RunnerConnection | undefined;
  remove(connection: RunnerConnection): boolean;
  /** The next idle connection that can run `toolId`, in turn. */
  idleFor(toolId: string): RunnerConnection | undefined;
  /** The tools some idle connection can run now. */
  idleTools(): Set<string>;
  /** Every connection of `runnerId`. */
  of(runnerId: string): RunnerConnection[];
  /** The runners with a connection here. */
  runnerIds(): string[];
  /** The connection running `jobId`. */
  holding(jobId: string): RunnerConnection | undefined;
}

export function createRunnerHub(): RunnerHub {
  const connections = new Map<string, RunnerConnection>();
  const turns = new Map<string, number>();
  const key = (c: Pick<RunnerConnection, 'runnerId' | 'consumerId'>): string => `${c.runnerId}\u0000${c.consumerId}`;
  return {
    add(connection) {
      const replaced = connections.get(key(connection));
      connections.set(key(connection), connection);
      return replaced;
    },
    remove(connection) {
      if (connections.get(key(connection)) !== connection) return false;
      connections.delete(key(connection));
      return true;
    },
    idleFor(toolId) {
      const candidates = [...connections.values()].filter((c) => c.job === undefined && c.capabilities.has(toolId)).sort((a, b) => key(a).localeCompare(key(b)));
      if (candidates.length === 0) return undefined;
      const turn = turns.get(toolId) ?? 0;
      turns.set(toolId, turn + 1);
      return candidates[turn % candidates.length];
    },
    idleTools() {
      const tools = new Set<string>();
      for (const c of connections.values()) if (c.job === undefined) for (const t of c.capabilities) tools.add(t);
      return tools;
    },
    of: (runnerId) => [...connections.values()].filter((c) => c.runnerId === runnerId),
    runnerIds: () => [...new Set([...connections.values()].map((c) => c.runnerId))],
    holding: (jobId) => [...connections.values()].find((c) => c.job === jobId),
  };
}
