import { Dispatcher, fetch as undiciFetch, getGlobalDispatcher } from 'undici';
import type { AddressGuard } from './address-guard.js';

/**
 * A fetch for a server whose URL the project's author wrote (an MCP server's, from a manifest or
 * the gateway's config): that host, with its port, is reached as written; any other host a
 * redirect leads to goes through the address guard, as an agent-chosen host would. fetch follows
 * redirects itself and dispatches each hop on that hop's origin, so the choice is made per hop.
 */
export function createGuardedFetch(guard: AddressGuard, authorHost: string, connectTimeoutMs = 10_000): typeof fetch {
  const dispatcher = new HostRouter(authorHost, getGlobalDispatcher(), guard.agent(connectTimeoutMs));
  return (input, init) => undiciFetch(input as Parameters<typeof undiciFetch>[0], { ...(init as Parameters<typeof undiciFetch>[1]), dispatcher }) as unknown as Promise<Response>;
}

/** Sends each hop to one of two shared dispatchers, which their owners close; fetch never closes a dispatcher. */
class HostRouter extends Dispatcher {
  constructor(
    private readonly authorHost: string,
    private readonly author: Dispatcher,
    private readonly checked: Dispatcher,
  ) {
    super();
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const host = new URL(String(options.origin)).host;
    return (host === this.authorHost ? this.author : this.checked).dispatch(options, handler);
  }
}
