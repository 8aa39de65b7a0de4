import { existsSync, mkdirSync, renameSync } from 'node:fs';
import path from 'node:path';
import { it } from 'vitest';
import { KERNEL_STATE_DIR } from '../../src/kernel/open-kernel.js';
import { EMBEDDED_REGISTRY_DIR, openRegistryTierDatabase } from '../../src/kernel/registry-tier-database.js';
import { postgresAvailable } from './postgres-server.js';
import { embeddedKernelRoot, postgresDatabase } from './run-resources.js';

/**
 * Where a test's registry tier lives, as `kiwi registry` and the loader find it: `env` (with
 * DATABASE_URL for the Postgres one) and `userDir` (whose `.ai/state/registry` is the embedded
 * one, a copy of the run's migrated database). stop() drops the database or removes the folder.
 */
export interface TierPlace {
  env: Record<string, string | undefined>;
  userDir: string;
  stop(): Promise<void>;
}

export type TierBackend = [name: string, open: () => Promise<TierPlace>];

const baseEnv = (): Record<string, string | undefined> => ({ PATH: process.env['PATH'], HOME: process.env['HOME'] });

export function registryTierBackends(): TierBackend[] {
  const backends: TierBackend[] = [['embedded PGlite', openEmbeddedTier]];
  if (postgresAvailable()) {
    backends.push([
      'a Postgres server',
      async () => {
        const server = await postgresDatabase();
        const user = embeddedKernelRoot('kiwi-tier-user-');
        return {
          env: { ...baseEnv(), DATABASE_URL: server.url },
          userDir: user.root,
          stop: async () => {
            user.remove();
            await server.stop();
          },
        };
      },
    ]);
  } else {
    it.skip('on a Postgres server: not installed here (apt-get install postgresql, as .ci/run does)', () => undefined);
  }
  return backends;
}

/** The embedded tier in `<userDir>/.ai/state/registry`, from a copy of the run's migrated database. */
export async function openEmbeddedTier(): Promise<TierPlace> {
  const user = embeddedKernelRoot('kiwi-tier-user-');
  mkdirSync(path.join(user.root, path.dirname(EMBEDDED_REGISTRY_DIR)), { recursive: true });
  if (existsSync(path.join(user.root, KERNEL_STATE_DIR))) renameSync(path.join(user.root, KERNEL_STATE_DIR), path.join(user.root, EMBEDDED_REGISTRY_DIR));
  else await (await openRegistryTierDatabase({ env: {}, userDir: user.root, create: true }))?.close(); // no global setup: made here, slowly
  return { env: baseEnv(), userDir: user.root, stop: async () => user.remove() };
}
