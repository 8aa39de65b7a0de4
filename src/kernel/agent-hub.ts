/**
 * The agent connections this kernel instance holds (§6.1, §8.2): by agent id, then client and
 * consumer id. A second connection with the same three replaces the first; a consumer id is the
 * client's own, so another client's key never replaces it. Executions go round-robin over an
 * agent's connections.
 */

/** Where pushed events go; false when the connection cannot take the event (closed, or its queue full). */
export interface PushChannel {
  send(event: string, data: unknown): boolean;
  close(): void;
}

export interface AgentConnection {
  /** The client of the key that opened it. */
  client: string;
  agentId: string;
  consumerId: string;
  channel: PushChannel;
}

export interface AgentHub {
  /** Registers `connection`; returns the one it replaced, if any. */
  add(connection: AgentConnection): AgentConnection | undefined;
  /** Forgets `connection` unless it was already replaced; true when it was the registered one. */
  remove(connection: AgentConnection): boolean;
  get(agentId: string, client: string, consumerId: string): AgentConnection | undefined;
  /** The next connection of `agentId` in turn, if any is open. */
  next(agentId: string): AgentConnection | undefined;
  connected(agentId: string): boolean;
}

export function createAgentHub(): AgentHub {
  const agents = new Map<string, Map<string, AgentConnection>>();
  const turns = new Map<string, number>();
  const key = (client: string, consumerId: string): string => `${client}\u0000${consumerId}`;
  return {
    add(connection) {
      let consumers = agents.get(connection.agentId);
      if (consumers === undefined) agents.set(connection.agentId, (consumers = new Map()));
      const replaced = consumers.get(key(connection.client, connection.consumerId));
      consumers.set(key(connection.client, connection.consumerId), connection);
      return replaced;
    },
    remove(connection) {
      const consumers = agents.get(connection.agentId);
      if (consumers?.get(key(connection.client, connection.consumerId)) !== connection) return false;
      consumers.delete(key(connection.client, connection.consumerId));
      if (consumers.size === 0) {
        agents.delete(connection.agentId);
        turns.delete(connection.agentId);
      }
      return true;
    },
    get: (agentId, client, consumerId) => agents.get(agentId)?.get(key(client, consumerId)),
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
