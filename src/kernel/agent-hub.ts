/**
 * The agent connections this kernel instance holds (§6.1, §8.2): by agent id, then consumer id.
 * A second connection with the same pair replaces the first. Executions go round-robin over an
 * agent's connections in consumer-id order.
 */

/** Where pushed events go; false when the connection cannot take the event (closed, or its queue full). */
export interface PushChannel {
  send(event: string, data: unknown): boolean;
  close(): void;
}

export interface AgentConnection {
  agentId: string;
  consumerId: string;
  channel: PushChannel;
}

export interface AgentHub {
  /** Registers `connection`; returns the one it replaced, if any. */
  add(connection: AgentConnection): AgentConnection | undefined;
  /** Forgets `connection` unless it was already replaced; true when it was the registered one. */
  remove(connection: AgentConnection): boolean;
  get(agentId: string, consumerId: string): AgentConnection | undefined;
  /** The next connection of `agentId` in turn, if any is open. */
  next(agentId: string): AgentConnection | undefined;
  connected(agentId: string): boolean;
}

export function createAgentHub(): AgentHub {
  const agents = new Map<string, Map<string, AgentConnection>>();
  const turns = new Map<string, number>();
  return {
    add(connection) {
      let consumers = agents.get(connection.agentId);
      if (consumers === undefined) agents.set(connection.agentId, (consumers = new Map()));
      const replaced = consumers.get(connection.consumerId);
      consumers.set(connection.consumerId, connection);
      return replaced;
    },
    remove(connection) {
      const consumers = agents.get(connection.agentId);
      if (consumers?.get(connection.consumerId) !== connection) return false;
      consumers.delete(connection.consumerId);
      if (consumers.size === 0) {
        agents.delete(connection.agentId);
        turns.delete(connection.agentId);
      }
      return true;
    },
    get: (agentId, consumerId) => agents.get(agentId)?.get(consumerId),
    next(agentId) {
      const consumers = agents.get(agentId);
      if (consumers === undefined || consumers.size === 0) return undefined;
      const ids = [...consumers.keys()].sort();
      const turn = turns.get(agentId) ?? 0;
      turns.set(agentId, turn + 1);
      return consumers.get(ids[turn % ids.length] as string);
    },
    connected: (agentId) => (agents.get(agentId)?.size ?? 0) > 0,
  };
}
