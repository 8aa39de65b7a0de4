import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { serveMetaOnStdio } from '../../mcp-server/serve-stdio.js';
import { parseToolListing } from '../../mcp-server/project-tools.js';
import { isKiwiError } from '../../base/errors.js';
import { openProject, type Project } from '../../project/open-project.js';
import type { ResolverRuntime } from '../../resolver/resolver-runtime.js';
import type { Resolver } from '../../resolver/types.js';
import { UsageError, type CliContext } from '../../cli/io.js';
import { parseFlags } from '../../cli/parse-flags.js';
import { MCP_HELP } from './mcp-help.js';
import { projectOptions } from '../../cli/project-options.js';
import { openRegistryResolver } from './index-tools.js';
import { createIndexProgress } from '../../cli/index-progress.js';

export interface StdioStreams {
  stdin: Readable;
  stdout: Writable;
}

/**
 * `kiwi mcp`: the meta-tool server on stdin/stdout, for MCP clients that spawn it. stdout is the
 * protocol: everything else (index progress, warnings) goes to stderr. Ends when the client
 * closes stdin, the process is told to stop (ctx.signal) or the index cannot be opened, closing
 * tools and children first.
 */
export async function mcpCommand(ctx: CliContext, streams: StdioStreams = { stdin: process.stdin, stdout: process.stdout }): Promise<number> {
  const { values } = parseFlags(ctx.argv, MCP_HELP);
  const options = projectOptions(ctx, values, { needsAi: false });
  const listing = toolListingFlags(values);
  // MCP clients often spawn servers in / or the home folder: serving that by mistake would
  // quietly create .ai/ there and offer no project tools.
  if (values['allow-empty'] !== true && !existsSync(path.join(options.projectDir, '.ai'))) {
    throw new UsageError(
      `${options.projectDir} has no .ai/ folder, so there are no project tools to serve; run \`kiwi init\` there to make one, pass --project DIR (the folder that holds .ai/) or set KIWI_PROJECT, or add --allow-empty to serve it anyway (only your user tools; .ai/ is created there for the index)`,
    );
  }
  // The index opens (the embedder's model above all, about a second) while the server already
  // answers: a client's handshake, tools/list and direct runs need no model; a search waits for it.
  const stop = new AbortController();
  const onStop = (): void => stop.abort();
  ctx.signal?.addEventListener('abort', onStop, { once: true });
  let project: Project | undefined;
  let opening: Promise<ResolverRuntime> | undefined;
  try {
    project = await openProject({ ...options, source: 'mcp' });
    if (stop.signal.aborted) return 0;
    const index = openIndex(ctx, project, stop.signal);
    opening = index;
    const failed = index.then(
      () => new Promise<void>(() => undefined),
      () => undefined,
    );
    const resolver: Resolver = { resolve: async (intent, resolveOptions) => (await index).resolver.resolve(intent, resolveOptions) };
    const ended = untilEnded(streams.stdin, ctx.signal);
    const server = serveMetaOnStdio({ project, resolver, listing, ...streams, onError: (error) => ctx.io.err(`kiwi mcp: ${error.message}`) });
    ctx.io.err(`kiwi: MCP server on stdio for ${project.root} (session ${project.session})`);
    // A broken index or model ends the server with its reason, as it would have before serving.
    await Promise.race([ended.promise, failed]);
    ended.dispose();
    await server.close();
    // The client went away: an index still opening is waited for, so that a broken one is
    // reported (exit 1), as it would be had it failed while serving. A stop signal cancels it.
    await index;
    return 0;
  } catch (error) {
    // Told to stop while the index was still syncing: that is a stop, not a failure.
    if (ctx.signal?.aborted) return 0;
    throw error;
  } finally {
    ctx.signal?.removeEventListener('abort', onStop);
    // After a failure of its own, a model still loading is not waited for.
    stop.abort();
    await Promise.allSettled([project?.close(), opening?.then((runtime) => runtime.close())]);
  }
}

/** The project's index over the registry it loaded, brought up to date, as `kiwi index` would make it. */
async function openIndex(ctx: CliContext, project: Project, signal: AbortSignal): Promise<ResolverRuntime> {
  const runtime = await openRegistryResolver(ctx, project.root, project.registry, signal);
  try {
    const report = await runtime.sync({ progress: createIndexProgress(ctx.io, { summary: false }), signal });
    if (report.added + report.updated + report.removed > 0) {
      ctx.io.err(`kiwi: index updated (${report.added} added, ${report.updated} updated, ${report.removed} removed)`);
    }
    ctx.io.err(`kiwi: index ready (${runtime.toolCount} tools)`);
    return runtime;
  } catch (error) {
    await runtime.close();
    throw error;
  }
}

/** Resolves when stdin ends or closes, or the signal aborts; `dispose` removes the listeners. */
function untilEnded(stdin: Readable, signal: AbortSignal | undefined): { promise: Promise<void>; dispose(): void } {
  let finish = (): void => undefined;
  const promise = new Promise<void>((resolve) => (finish = resolve));
  stdin.once('end', finish);
  stdin.once('close', finish);
  signal?.addEventListener('abort', finish, { once: true });
  if (signal?.aborted) finish();
  return {
    promise,
    dispose() {
      stdin.off('end', finish);
      stdin.off('close', finish);
      signal?.removeEventListener('abort', finish);
    },
  };
}

/** --tools, --tags and --max; a bad one is a usage error that says what to write. */
function toolListingFlags(values: { tools?: string | boolean; tags?: string | boolean; max?: string | boolean }) {
  const flag = (v: string | boolean | undefined): string | undefined => (typeof v === 'string' ? v : undefined);
  try {
    return parseToolListing({ tools: flag(values.tools), tags: flag(values.tags), max: flag(values.max) });
  } catch (error) {
    if (isKiwiError(error, 'INVALID_INPUT')) throw new UsageError(`--${error.message}`);
    throw error;
  }
}
