import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { copyDemoProject } from './demo-project.js';
import { startReplayLlmServer, type ReplayLlmServer } from './replay-llm-server.js';
import { serveGateway, type ServedGateway } from './serve-gateway.js';

export interface DemoGateway extends ServedGateway {
  /** The throwaway copy of the demo project; close() removes it. */
  root: string;
  /** The replay upstream the copy's gateway.yaml points at; close() stops it. */
  llm: ReplayLlmServer;
}

export interface DemoGatewayOptions {
  /** The temp folder's name prefix (copyDemoProject's). */
  prefix?: string;
  /** The gateway.yaml `upstreams:` entries (YAML flow maps) for the replay server at `llmUrl`; by default one OpenAI upstream for `gpt-*`. */
  upstreams?: (llmUrl: string) => string[];
  /** Passed to serveGateway (an upstream's API key variable). */
  extraEnv?: Record<string, string>;
  /** More of gateway.yaml, after the upstreams (YAML lines). */
  config?: string;
  /** Changes to the copy before the gateway opens it (a tool added, the policy widened, client keys made). */
  prepare?: (root: string) => void | Promise<void>;
}

const recordedOpenAi = (llmUrl: string): string[] => [`{ name: recorded, kind: openai, base_url: "${llmUrl}/v1", models: ["gpt-*"] }`];

/**
 * The whole gateway as `kiwi serve` wires it on a copy of the demo `.ai/`, with a local server
 * replaying recorded LLM streams as its upstream: the one thing an end-to-end test cannot reach.
 */
export async function serveDemoGateway(options: DemoGatewayOptions = {}): Promise<DemoGateway> {
  const llm = await startReplayLlmServer();
  const root = copyDemoProject(options.prefix);
  const remove = async (): Promise<void> => {
    await llm.close();
    rmSync(root, { recursive: true, force: true });
  };
  try {
    await options.prepare?.(root);
    const entries = (options.upstreams ?? recordedOpenAi)(llm.url);
    writeFileSync(path.join(root, '.ai', 'config', 'gateway.yaml'), ['upstreams:', ...entries.map((e) => `  - ${e}`), options.config ?? ''].join('\n'));
    const served = await serveGateway(root, options.extraEnv);
    return {
      ...served,
      root,
      llm,
      async close() {
        await served.close();
        await remove();
      },
    };
  } catch (error) {
    await remove();
    throw error;
  }
}
