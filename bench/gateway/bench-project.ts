import { cp, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';

/**
 * The project the bench's gateway opens: a temporary copy of the repository's demo `.ai/`
 * (without its generated logs and vectors), a gateway.yaml whose only upstream is the bench's
 * local server, and a small package.json for the intent's read_file to read.
 */

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface BenchProject {
  root: string;
  /** A user tier that does not exist, so the machine's ~/.ai tools stay out of the bench. */
  userDir: string;
  remove(): Promise<void>;
}

/**
 * `prefetch: false` measures the proxy and the loop alone (prefetch embeds snapshots of every
 * answer); `recordChats: false` without the kernel's record of each chat.
 */
export async function createBenchProject(upstreamUrl: string, options: { prefetch: boolean; recordChats?: boolean } = { prefetch: true }): Promise<BenchProject> {
  const root = await realpath(await mkdtemp(path.join(tmpdir(), 'kiwi-bench-gateway-')));
  try {
    const source = path.join(REPO_ROOT, '.ai');
    const generated = ['logs', 'vectors'].map((d) => path.join(source, d));
    await cp(source, path.join(root, '.ai'), { recursive: true, filter: (src) => !generated.some((g) => src === g || src.startsWith(g + path.sep)) });
    await writeFile(path.join(root, 'package.json'), `${JSON.stringify({ name: 'kiwi-bench-project', version: '1.0.0', private: true }, null, 2)}\n`);
    await writeFile(
      path.join(root, '.ai', 'config', 'gateway.yaml'),
      stringify({ host: '127.0.0.1', port: 0, upstreams: [{ name: 'bench', kind: 'openai', base_url: `${upstreamUrl}/v1`, models: ['bench-*'] }], prefetch: { enabled: options.prefetch }, kernel: { record_chats: options.recordChats ?? true } }),
    );
    // The demo policy allows 60 calls a minute per tool; the intent phase makes more than that.
    const policyFile = path.join(root, '.ai', 'config', 'policy.yaml');
    const policy = parse(await readFile(policyFile, 'utf8')) as Record<string, unknown>;
    policy.rate_limits = { per_tool: { '*': { max: 1_000_000, per_ms: 60_000 } }, per_client: { max: 1_000_000, per_ms: 60_000 } };
    await writeFile(policyFile, stringify(policy));
  } catch (error) {
    await rm(root, { recursive: true, force: true });
    throw error;
  }
  return { root, userDir: path.join(root, 'no-user-tier'), remove: () => rm(root, { recursive: true, force: true }) };
}
