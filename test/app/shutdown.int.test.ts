import { existsSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import { openGatewayKernel } from '../../src/app/gateway-kernel.js';
import { processAlive } from '../../src/base/process-alive.js';
import { copyDemoProject } from '../helpers/demo-project.js';
import { openAiStream } from '../helpers/openai-sse.js';
import { startReplayLlmServer, type ReplayLlmServer } from '../helpers/replay-llm-server.js';
import { addSlowTool, readSlowPid } from '../helpers/slow-tool.js';
import { serveInProcess } from '../helpers/serve-in-process.js';

/**
 * `kiwi serve` told to stop while a chat's tool still runs: once the grace period is over (0 s
 * here, `limits.shutdown_grace_ms`), the call is cancelled and so recorded (audit, execution, log),
 * its process tree is ended, and the streaming client reads why as the stream's last event.
 * The gateway runs in this process as the CLI runs it; its upstream is a local replay server.
 */

let root: string;
let llm: ReplayLlmServer;
let pidFile: string;
let env: Record<string, string | undefined>;

beforeAll(async () => {
  llm = await startReplayLlmServer();
  llm.models(['gpt-4o-mini']);
  root = copyDemoProject('kiwi-shutdown-');
  pidFile = addSlowTool(root);
  writeFileSync(path.join(root, '.ai', 'config', 'gateway.yaml'), `upstreams:\n  - { name: recorded, kind: openai, base_url: "${llm.url}/v1", models: ["gpt-*"] }\nlimits:\n  shutdown_grace_ms: 0\n`);
  env = { PATH: process.env['PATH'], HOME: root, KIWI_USER_DIR: path.join(root, 'no-user-tier') };
}, 60_000);

afterAll(async () => {
  await llm?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

describe('stopping kiwi serve during a tool call', () => {
  it('cancels the call once the grace period is over: audited and logged as cancelled, its process ended, its execution cancelled, the client told', async () => {
    const { base, out, err, stop, exit } = await serveInProcess(root, env);

    llm.replyOnce(openAiStream(['Waiting. [TOOL: wait_for_batch {}]']));
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'not-used', maxRetries: 0 });
    const { data: stream, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'is the batch done?' }] }).withResponse();
    const executionId = response.headers.get('x-kiwi-execution-id');
    expect(executionId).toEqual(expect.any(String));
    const reading = (async () => {
      for await (const chunk of stream) void chunk;
      return 'the stream ended without an error';
    })().catch((e: unknown) => e);
    // The tool writes its pid once it runs.
    await expect.poll(() => existsSync(pidFile), { timeout: 30_000 }).toBe(true);
    const pid = readSlowPid(pidFile);

    stop.abort();
    expect(await exit).toBe(0);
    expect(out.join('\n')).toContain('Ctrl-C or SIGTERM stops it (requests in flight get 0 s to finish, limits.shutdown_grace_ms;');

    // The client read why, as the stream's last event, not a broken connection.
    const error = await reading;
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(String((error as Error).message)).toMatch(/The gateway is stopping \(requests running when it was told to stop get 0 s to finish\): this request and its running tools were cancelled/);
    // The tool's process tree was ended before the gateway stopped.
    expect(processAlive(pid)).toBe(false);

    // Its audit record says it was cancelled, and why.
    const records = await readAuditTail({ dir: path.join(root, '.ai', 'logs', 'audit'), limit: 100 });
    const cut = records.filter((r) => r.tool === 'wait_for_batch');
    expect(cut).toHaveLength(1);
    expect(cut[0]).toMatchObject({ decision: 'allow', source: 'gateway', cancelled: 'gateway stopping', error: { code: 'TOOL_CANCELLED' } });

    // The log names the call.
    const log = err.join('\n');
    expect(log).toContain(`kiwi: stopping: cancelling tool call wait_for_batch (call ${cut[0]?.call_id}, gateway, client local, session ${cut[0]?.session})`);
    expect(log).toContain('kiwi: stopping: cancelling chat on /v1/chat/completions for model gpt-4o-mini (client local)');
    expect(log).toContain('kiwi: stopping: cancelled 1 tool call and 1 chat that were still running');

    // The chat's execution is cancelled, saying why.
    const kernel = await openGatewayKernel({ root, env });
    try {
      const k = await kernel.kernel();
      expect((await k.executions.get(executionId as string)).status).toBe('cancelled');
      const events = await k.executions.events(executionId as string, 0, 100);
      expect(events.at(-1)).toMatchObject({ type: 'execution.cancelled', payload: { reason: 'gateway stopping' } });
      // The step of the cut call ends with its cancellation, under the call id its audit record has.
      expect(events.find((e) => e.type === 'step.failed' || e.type === 'step.cancelled')?.payload).toMatchObject({ error: expect.stringMatching(/^TOOL_CANCELLED: /), call_id: cut[0]?.call_id });
    } finally {
      await kernel.close();
    }
  }, 120_000);
});
