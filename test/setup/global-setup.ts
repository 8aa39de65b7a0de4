import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { KERNEL_MIGRATIONS } from '../../src/kernel/kernel-migrations.js';
import { KERNEL_STATE_DIR } from '../../src/kernel/open-kernel.js';
import { loadRegistry } from '../../src/registry/load-registry.js';
import { openProjectResolverRuntime } from '../../src/resolver/resolver-runtime.js';
import { migrate } from '../../src/store/sql/migrate.js';
import { openPostgresDb } from '../../src/store/sql/postgres-db.js';
import { abandonedEntries } from '../helpers/abandoned-entries.js';
import { postgresAvailable, startPostgres, type PostgresServer } from '../helpers/postgres-server.js';
import { redisAvailable, startRedis } from '../helpers/redis-server.js';
import { copyDemoProject } from '../helpers/demo-project.js';
import { CLI_BUILD_PREFIX, TEMPLATE_DATABASE } from '../helpers/run-resources.js';
import { REPO_ROOT } from '../helpers/temp-project.js';
import { pathPastPythonShim } from './python-path.js';

/**
 * What the integration tests share, made once per run before any of them starts (the
 * `integration` project of vitest.config.ts runs this file; tests read it with `inject`, through
 * test/helpers/run-resources.ts):
 *
 * - `kiwiKernelTemplate`: an embedded kernel database (PGlite's data folder), migrated. Creating
 *   one takes PGlite ~5 s (it runs initdb in WebAssembly); a copy of this one opens in ~0.3 s.
 *   It is kept between runs (kernelTemplate below).
 * - `kiwiDemoTemplate`: the demo `.ai/` as copyDemoProject copies it, with its search index
 *   (LanceDB, `.ai/vectors`) built and that kernel database in `.ai/state/kernel`.
 * - `kiwiPostgresUrl`: one Postgres server for the run, with a migrated database
 *   `kiwi_template` that each test file clones (CREATE DATABASE … TEMPLATE), or '' where no
 *   server is installed (the tests that need one skip then, as before).
 * - `kiwiRedisUrl`: one Redis server for the run (test files keep apart by key prefix), or ''
 *   where none is installed.
 * - `kiwiCli`: src/ compiled to JavaScript once (esbuild, file by file, as `npm run build`
 *   lays out dist/), for the tests that run `kiwi` as a process: node starts it in about half
 *   the time `node --import tsx src/app/main.ts` takes, and a user without tsx's cache (another
 *   uid) in a fraction. It sits in `.kiwi-test-cli-<pid>/` at the repository root (git-ignored),
 *   beside src/, so that the paths src/ finds from its own place (models/, node_modules/, the
 *   install root the sandbox mounts) are the same.
 *
 * It also sets the run's PATH, past a pyenv shim for python3 where there is one (python-path.ts).
 *
 * All but the kernel template are removed after the run, with the server.
 */

declare module 'vitest' {
  export interface ProvidedContext {
    kiwiKernelTemplate: string;
    kiwiDemoTemplate: string;
    kiwiPostgresUrl: string;
    kiwiRedisUrl: string;
    kiwiCli: string;
  }
}

/**
 * The migrated embedded kernel database, kept between runs in node_modules/.cache under a key
 * made of everything that shapes it (PGlite's version, the migrations, the code that opens and
 * migrates it): a warm run skips PGlite's initdb, a change to any of those makes a new one.
 * Tests only ever copy it. Built in a process of its own (build-kernel-template.ts), under a
 * temporary name renamed into place, so a killed or concurrent run never leaves half of one.
 */
async function kernelTemplate(): Promise<string> {
  const inputs = [
    readFileSync(path.join(REPO_ROOT, 'node_modules', '@electric-sql', 'pglite', 'package.json'), 'utf8'),
    JSON.stringify(KERNEL_MIGRATIONS),
    ...['src/store/sql/pglite-db.ts', 'src/store/sql/migrate.ts', 'test/setup/build-kernel-template.ts'].map((f) => readFileSync(path.join(REPO_ROOT, f), 'utf8')),
  ];
  const key = createHash('sha256').update(inputs.join('\0')).digest('hex').slice(0, 16);
  const cache = path.join(REPO_ROOT, 'node_modules', '.cache', 'kiwi-test');
  const dir = path.join(cache, `kernel-${key}`);
  if (!existsSync(dir)) {
    const building = `${dir}.${process.pid}.tmp`;
    rmSync(building, { recursive: true, force: true });
    const script = path.join(REPO_ROOT, 'test', 'setup', 'build-kernel-template.ts');
    await promisify(execFile)(process.execPath, ['--import', 'tsx', script, building], { cwd: REPO_ROOT, timeout: 120_000 });
    // Another run may have put one there meanwhile: both are the same, either will do.
    if (existsSync(dir)) rmSync(building, { recursive: true, force: true });
    else renameSync(building, dir);
  }
  // Its time says when a run last used it. Another checkout sharing node_modules may be using an
  // older key right now, so only those unused for a week go, with what killed runs were building.
  const now = new Date();
  utimesSync(dir, now, now);
  for (const left of abandonedEntries(cache, /^kernel-.*\.(\d+)\.tmp$/)) rmSync(left, { recursive: true, force: true });
  for (const entry of readdirSync(cache)) {
    if (!/^kernel-[0-9a-f]+$/.test(entry) || entry === path.basename(dir)) continue;
    if (now.getTime() - statSync(path.join(cache, entry)).mtimeMs > 7 * 86_400_000) rmSync(path.join(cache, entry), { recursive: true, force: true });
  }
  return dir;
}

/** copyDemoProject's copy (made here from the repository, as there is no template yet), its index built. */
async function buildDemoTemplate(): Promise<string> {
  const root = copyDemoProject('kiwi-test-run-demo-');
  try {
    const userDir = path.join(root, 'no-user-tier');
    const registry = await loadRegistry({ projectDir: root, userDir });
    const env = { PATH: process.env['PATH'], HOME: root, KIWI_USER_DIR: userDir };
    const runtime = await openProjectResolverRuntime({ root, tools: registry.tools.values(), directives: registry.directives.values(), knowledge: registry.knowledge.values(), env });
    try {
      await runtime.sync();
    } finally {
      await runtime.close();
    }
    return root;
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
}

/** Compiles src/ to `<repo>/.kiwi-test-cli-<pid>/` and returns its app/main.js; removes what killed runs left. */
async function buildCli(): Promise<string> {
  for (const left of abandonedEntries(REPO_ROOT, new RegExp(`^${CLI_BUILD_PREFIX.replaceAll('.', '\\.')}(\\d+)$`))) rmSync(left, { recursive: true, force: true });
  const { build } = await import('esbuild');
  const src = path.join(REPO_ROOT, 'src');
  const out = path.join(REPO_ROOT, `${CLI_BUILD_PREFIX}${process.pid}`);
  const files = readdirSync(src, { recursive: true, encoding: 'utf8' });
  await build({
    entryPoints: files.filter((f) => (f.endsWith('.ts') || f.endsWith('.tsx')) && !f.endsWith('.d.ts')).map((f) => path.join(src, f)),
    outdir: out,
    outbase: src,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'warning',
  });
  // What the build copies beside the compiled code (package.json's build): worker scripts and the console's assets.
  for (const f of files.filter((f) => f.endsWith('.mjs') || f.startsWith(path.join('console', 'assets') + path.sep))) cpSync(path.join(src, f), path.join(out, f));
  return path.join(out, 'app', 'main.js');
}

async function startTemplatePostgres(): Promise<PostgresServer | undefined> {
  if (!postgresAvailable()) return undefined;
  const server = await startPostgres();
  try {
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    try {
      await admin.query(`create database ${TEMPLATE_DATABASE}`);
    } finally {
      await admin.end();
    }
    const db = await openPostgresDb(server.url.replace(/\/postgres$/, `/${TEMPLATE_DATABASE}`), { maxConnections: 1 });
    try {
      await migrate(db, KERNEL_MIGRATIONS);
    } finally {
      await db.close();
    }
    return server;
  } catch (error) {
    await server.stop();
    throw error;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // Before the test processes start: they, and every gateway and tool they start, take this PATH.
  process.env['PATH'] = pathPastPythonShim(process.env['PATH'] ?? '');
  // All at once: PGlite's initdb (when the kernel template is not cached) and esbuild in
  // processes of their own, Postgres's and Redis's in theirs, the embedder's model in a worker thread.
  const [kernel, demo, server, cli, redis] = await Promise.allSettled([kernelTemplate(), buildDemoTemplate(), startTemplatePostgres(), buildCli(), redisAvailable() ? startRedis() : undefined]);
  const teardown = async (): Promise<void> => {
    if (server.status === 'fulfilled') await server.value?.stop();
    if (redis.status === 'fulfilled') await redis.value?.stop();
    if (demo.status === 'fulfilled') rmSync(demo.value, { recursive: true, force: true });
    rmSync(path.join(REPO_ROOT, `${CLI_BUILD_PREFIX}${process.pid}`), { recursive: true, force: true });
  };
  const failed = [kernel, demo, server, cli, redis].find((r) => r.status === 'rejected');
  if (failed !== undefined || kernel.status === 'rejected' || demo.status === 'rejected' || server.status === 'rejected' || cli.status === 'rejected' || redis.status === 'rejected') {
    await teardown();
    throw (failed as PromiseRejectedResult).reason;
  }
  cpSync(kernel.value, path.join(demo.value, KERNEL_STATE_DIR), { recursive: true });
  project.provide('kiwiKernelTemplate', kernel.value);
  project.provide('kiwiDemoTemplate', demo.value);
  project.provide('kiwiPostgresUrl', server.value?.url ?? '');
  project.provide('kiwiRedisUrl', redis.value?.url ?? '');
  project.provide('kiwiCli', cli.value);
  return teardown;
}
