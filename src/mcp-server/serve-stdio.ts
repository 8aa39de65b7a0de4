import type { Readable, Writable } from 'node:stream';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import type { Project } from '../project/open-project.js';
import type { Resolver } from '../resolver/types.js';
import { createMetaServer } from './meta-server.js';
import { createStdioLineTransport } from './stdio-line-transport.js';
import type { ToolListing } from './project-tools.js';

export interface StdioServing {
  close(): Promise<void>;
}

/**
 * The meta-tool server on a pair of pipes. Both protocols share the pipe: the client's first
 * message picks the era (`server/discover` or a request naming 2026-07-28 in its _meta:
 * 2026-07-28; `initialize`: 2025) and the SDK pins one server of that era for the connection.
 * The line transport keeps its caps under it.
 */
export function serveMetaOnStdio(options: { project: Project; resolver: Resolver; listing?: ToolListing; stdin: Readable; stdout: Writable; onError: (error: Error) => void }): StdioServing {
  const { project, resolver, listing } = options;
  return serveStdio(({ era }) => createMetaServer({ project, resolver, era, ...(listing ? { listing } : {}) }), {
    transport: createStdioLineTransport(options.stdin, options.stdout),
    onerror: options.onError,
  });
}
