import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createAuditLog } from '../../src/audit/audit-log.js';
import { createLoopDetector } from '../../src/audit/loop-detector.js';
import { createEmbedder, type EmbedderConfig } from '../../src/embed/create-embedder.js';
import { createMcpClientPool } from '../../src/mcp-client/client-pool.js';
import { createRequirementCheck } from '../../src/primitives/python-requirements.js';
import { createRateLimiter } from '../../src/policy/rate-limiter.js';
import { createHttpClient } from '../../src/primitives/http-client.js';
import { openProject, newSessionId } from '../../src/project/open-project.js';
import { createToolProxy, type ToolProxy } from '../../src/proxy/tool-proxy.js';
import type { Tool } from '../../src/registry/types.js';
import { loadResolverConfig } from '../../src/resolver/resolver-config.js';
import { createResolver, resolvableTools, type ResolverSettings } from '../../src/resolver/resolver.js';
import type { StagedResolver } from '../../src/resolver/types.js';
import { openToolIndex } from '../../src/store/tool-index.js';
import { importCatalog } from '../../src/datasets/catalog-file.js';
import { callableCatalogTools, catalogPolicy } from './catalog-tools.js';
import { startMockApi } from './mock-api.js';

/**
 * Everything one prefetch run works with: the tools behind a tool proxy, and two resolvers over
 * ONE index and ONE embedder, one for prefetch on and one for off. Two, because a resolver
 * remembers query vectors: with one, whichever side replayed a trace second would find the
 * intents already embedded.
 */
export interface BenchWorld {
  /** What was opened, for the report. */
  catalog: string;
  tools: ReadonlyMap<string, Tool>;
  proxy: ToolProxy;
  session: string;
  resolvers: { on: StagedResolver; off: StagedResolver };
  /** What a second index over the same tools needs (prefetch's static snapshot index). */
  resolvable: ReadonlyMap<string, Tool>;
  settings: Partial<ResolverSettings>;
  embedderId: string;
  toolCount: number;
  indexBuildMs: number;
  close(): Promise<void>;
}

export interface WorldOptions {
  /** Keeps the index between runs (sync is incremental); a temporary folder by default. */
  indexDir?: string;
  log?: (message: string) => void;
  onIndexProgress?: (done: number, total: number) => void;
}

/** A FORMAT.md catalog as `api` tools answered by the local mock API after `toolMs`. */
export async function openCatalogWorld(catalogFile: string, options: WorldOptions & { toolMs: number }): Promise<BenchWorld> {
  const catalog = await importCatalog(catalogFile);
  if (catalog.skipped.length) options.log?.(`catalog: skipped ${catalog.skipped.length} lines, e.g. ${catalog.skipped[0]}`);
  const cleanup: Array<() => Promise<unknown>> = [];
  try {
    const root = await realpath(await mkdtemp(path.join(tmpdir(), 'kiwi-prefetch-bench-')));
    cleanup.push(() => rm(root, { recursive: true, force: true }));
    const api = await startMockApi({ delayMs: options.toolMs });
    cleanup.unshift(() => api.close());
    const tools = callableCatalogTools(catalog.tools, api.url);
    const session = newSessionId('bench');
    const audit = createAuditLog({ dir: path.join(root, 'audit'), sessionId: session });
    const http = createHttpClient();
    const mcp = createMcpClientPool({ baseEnv: {} });
    cleanup.unshift(() => audit.close(), () => http.close(), () => mcp.close());
    const proxy = createToolProxy({
      tools,
      context: catalogPolicy(root),
      primitives: { http, mcp, requirements: createRequirementCheck() },
      audit,
      loops: createLoopDetector(),
      rateLimiter: createRateLimiter(),
      plan: { root, env: {} },
    });
    const resolution = await openResolvers(tools, { kind: 'use-lite' }, {}, options);
    cleanup.unshift(resolution.close);
    return { catalog: catalogFile, tools, proxy, session, ...resolution, close: () => closeAll(cleanup) };
  } catch (error) {
    await closeAll(cleanup);
    throw error;
  }
}

/** The demo project (`.ai/` under `projectDir`): its real tools, policy, proxy and resolver settings. */
export async function openProjectWorld(projectDir: string, options: WorldOptions): Promise<BenchWorld> {
  const project = await openProject({ projectDir, env: process.env, source: 'gateway' });
  const cleanup: Array<() => Promise<unknown>> = [() => project.close()];
  try {
    // The argument model (if resolver.yaml names one) is left out: it would measure a remote LLM, not prefetch.
    const config = await loadResolverConfig(path.join(project.root, '.ai', 'config', 'resolver.yaml'), { env: process.env, root: project.root });
    const resolution = await openResolvers(project.registry.tools, config.embedder, config.settings, options);
    cleanup.unshift(resolution.close);
    return { catalog: `${project.root}/.ai`, tools: project.registry.tools, proxy: project.proxy, session: project.session, ...resolution, close: () => closeAll(cleanup) };
  } catch (error) {
    await closeAll(cleanup);
    throw error;
  }
}

async function openResolvers(
  allTools: ReadonlyMap<string, Tool>,
  embedderConfig: EmbedderConfig,
  settings: Partial<ResolverSettings>,
  options: WorldOptions,
): Promise<Pick<BenchWorld, 'resolvers' | 'resolvable' | 'settings' | 'embedderId' | 'toolCount' | 'indexBuildMs'> & { close(): Promise<void> }> {
  const tools = resolvableTools(allTools.values());
  const cleanup: Array<() => Promise<unknown>> = [];
  try {
    const embedder = await createEmbedder(embedderConfig);
    cleanup.unshift(() => embedder.close());
    const dir = options.indexDir ?? (await mkdtemp(path.join(tmpdir(), 'kiwi-prefetch-index-')));
    if (!options.indexDir) cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const index = await openToolIndex({ dir, embedder, ...(options.log ? { log: options.log } : {}) });
    cleanup.unshift(() => index.close());
    const t0 = performance.now();
    await index.sync([...tools.values()], options.onIndexProgress ? { onProgress: options.onIndexProgress } : {});
    const indexBuildMs = performance.now() - t0;
    const make = () => createResolver({ tools, search: index, embedder, settings });
    return {
      resolvers: { on: make(), off: make() },
      resolvable: tools,
      settings,
      embedderId: embedder.id, toolCount: tools.size, indexBuildMs,
      close: () => closeAll(cleanup),
    };
  } catch (error) {
    await closeAll(cleanup);
    throw error;
  }
}

/** In order, each awaited, none skipped when one fails. */
async function closeAll(steps: Array<() => Promise<unknown>>): Promise<void> {
  for (const step of steps) await step().catch(() => undefined);
}
