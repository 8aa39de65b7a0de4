import path from 'node:path';
import { openGateway, type Gateway } from '../../src/app/open-gateway.js';
import { listen, type Listener } from '../../src/http/server/listen.js';
import { seedKernelDatabase } from './run-resources.js';

export interface ServedGateway {
  gateway: Gateway;
  server: Listener;
  /** The environment the gateway was opened with (HOME is the project, no user tier). */
  env: Record<string, string | undefined>;
  close(): Promise<void>;
}

/**
 * The project's gateway as `kiwi serve` runs it, on 127.0.0.1 and a free port: HOME is the
 * project itself and the user tier a folder that does not exist, so nothing of the machine's
 * own ~/.ai leaks in. `extraEnv` adds keys (an upstream's API key variable). A project without
 * an embedded kernel database gets a copy of the run's migrated one (run-resources.ts), the
 * same database the gateway would make, in a second instead of five.
 */
export async function serveGateway(root: string, extraEnv: Record<string, string> = {}): Promise<ServedGateway> {
  const userDir = path.join(root, 'no-user-tier');
  const env = { PATH: process.env['PATH'], HOME: root, KIWI_USER_DIR: userDir, ...extraEnv };
  if (extraEnv['DATABASE_URL'] === undefined) seedKernelDatabase(root);
  const gateway = await openGateway({ projectDir: root, env, userDir });
  try {
    const server = await listen((request, env) => gateway.app.fetch(request, env), { host: '127.0.0.1', port: 0 });
    return {
      gateway,
      server,
      env,
      async close() {
        gateway.endStreams(); // as `kiwi serve` stops
        await server.close(1000);
        await gateway.close();
      },
    };
  } catch (error) {
    await gateway.close();
    throw error;
  }
}
