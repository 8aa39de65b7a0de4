import { cpSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import { KERNEL_STATE_DIR } from '../../src/kernel/open-kernel.js';
import { startPostgres, type PostgresServer } from './postgres-server.js';
import { startRedis } from './redis-server.js';
import { REPO_ROOT } from './temp-project.js';

/**
 * What test/setup/global-setup.ts made once for the run, for the test files to take a copy of.
 * Each helper works without it too (a file run outside the `integration` project, a script):
 * then it makes its own, slowly, as the tests did before there was a global setup.
 */

type Provided = 'kiwiKernelTemplate' | 'kiwiDemoTemplate' | 'kiwiPostgresUrl' | 'kiwiRedisUrl' | 'kiwiCli';

function provided(key: Provided): string | undefined {
  try {
    const value = inject(key);
    return typeof value === 'string' && value !== '' ? value : undefined;
  } catch {
    return undefined; // not in a test worker (the global setup itself)
  }
}

/** Where the global setup compiles src/ (`<repo>/.kiwi-test-cli-<pid>/`, git-ignored). */
export const CLI_BUILD_PREFIX = '.kiwi-test-cli-';

/**
 * The arguments to node that run `kiwi` (the CLI's main module), to put before the command's
 * own: the run's compiled src/ (global-setup.ts), else src/app/main.ts through tsx.
 */
export function kiwiCli(): string[] {
  const built = provided('kiwiCli');
  return built === undefined ? ['--import', 'tsx', path.join(REPO_ROOT, 'src', 'app', 'main.ts')] : [built];
}

/** The demo project with its search index built and its kernel database made, or undefined. */
export function demoTemplate(): string | undefined {
  return provided('kiwiDemoTemplate');
}

/**
 * Puts a copy of the run's migrated embedded kernel database where a gateway on `root` opens
 * its own (`.ai/state/kernel`), unless there is one: the gateway then opens it as it would one
 * it made itself, in ~1 s instead of PGlite's ~5 s. Without the global setup, nothing is copied.
 */
export function seedKernelDatabase(root: string): void {
  const template = provided('kiwiKernelTemplate');
  const target = path.join(root, KERNEL_STATE_DIR);
  if (template === undefined || existsSync(target)) return;
  mkdirSync(path.dirname(target), { recursive: true });
  cpSync(template, target, { recursive: true });
}

/** A throwaway project root holding a copy of the migrated embedded kernel database (openKernel's `root`). */
export function embeddedKernelRoot(prefix = 'kiwi-kernel-'): { root: string; remove(): void } {
  const root = realpathSync(mkdtempSync(path.join(tmpdir(), prefix)));
  seedKernelDatabase(root);
  return { root, remove: () => rmSync(root, { recursive: true, force: true }) };
}

/** The migrated database on the run's Postgres server that each file's database is cloned from. */
export const TEMPLATE_DATABASE = 'kiwi_template';

let counter = 0;

/**
 * A database of its own on the run's Postgres server, cloned from the migrated template, so a
 * test file gets an empty, migrated kernel database in a fraction of a second; stop() drops it.
 * Without the global setup's server, a server of its own (startPostgres), stopped by stop().
 */
export async function postgresDatabase(): Promise<PostgresServer> {
  const admin = provided('kiwiPostgresUrl');
  if (admin === undefined) return startPostgres();
  const name = `kiwi_${process.pid}_${++counter}_${Math.random().toString(36).slice(2, 8)}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  try {
    // Two files cloning the template at the same moment: Postgres refuses the second while the
    // first copies ("source database … is being accessed by other users"); it is free again at once.
    for (let attempt = 0; ; attempt++) {
      try {
        await client.query(`create database ${name} template ${TEMPLATE_DATABASE}`);
        break;
      } catch (error) {
        if (attempt >= 50 || !/being accessed by other users/.test((error as Error).message)) throw error;
        await new Promise((r) => setTimeout(r, 50 + Math.random() * 100));
      }
    }
  } finally {
    await client.end();
  }
  return {
    url: admin.replace(/\/[^/]*$/, `/${name}`),
    async stop() {
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      try {
        await c.query(`drop database if exists ${name} with (force)`);
      } finally {
        await c.end();
      }
    },
  };
}

/**
 * The run's Redis server and a key prefix of the caller's own (`kiwi-test:<pid>:<n>:`), so files
 * sharing the server never see each other's keys (every key the gateway writes expires by itself,
 * and the server ends with the run). Without the global setup's server, a server of its own,
 * stopped by stop().
 */
export async function redisForTest(): Promise<{ url: string; prefix: string; stop(): Promise<void> }> {
  const prefix = `kiwi-test:${process.pid}:${++counter}:`;
  const url = provided('kiwiRedisUrl');
  if (url === undefined) {
    const own = await startRedis();
    return { url: own.url, prefix, stop: own.stop };
  }
  return { url, prefix, stop: async () => undefined };
}
