import { writeFileSync } from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { allowTools } from './demo-project.js';
import { openAiStream } from './openai-sse.js';
import type { ReplayLlmServer } from './replay-llm-server.js';

/** Adds `stamp` to a copy of the demo project: a tool that answers `stamped <id>` at once, for counting calls. */
export function addStamp(root: string): void {
  const dir = path.join(root, '.ai', 'tools', 'project');
  writeFileSync(path.join(dir, 'stamp.mjs'), "let s = ''; process.stdin.on('data', (c) => (s += c)); process.stdin.on('end', () => process.stdout.write(`stamped ${JSON.parse(s).id}`));\n");
  writeFileSync(path.join(dir, 'stamp.yaml'), 'tool_id: stamp\ntool_type: script\nexecutor: node_runtime\nversion: "1.0.0"\ndescription: "Stamp an id"\nconfig:\n  script: stamp.mjs\nparameters:\n  - { name: id, type: string, required: true }\n');
  allowTools(root, ['stamp']);
}

/** Adds `ship_release` to a copy of the demo project: a tool that `requires_approval`, so a chat calling it waits for a person. */
export function addShipRelease(root: string): void {
  const dir = path.join(root, '.ai', 'tools', 'project');
  writeFileSync(path.join(dir, 'ship.mjs'), "let s = ''; process.stdin.on('data', (c) => (s += c)); process.stdin.on('end', () => process.stdout.write(`shipped ${JSON.parse(s).version}`));\n");
  writeFileSync(path.join(dir, 'ship_release.yaml'), 'tool_id: ship_release\ntool_type: script\nexecutor: node_runtime\nversion: "1.0.0"\ndescription: "Ship a release"\nrequires_approval: true\nconfig:\n  script: ship.mjs\nparameters:\n  - { name: version, type: string, required: true }\n');
  allowTools(root, ['ship_release']);
}

/**
 * A streamed chat through `baseUrl` (a gateway, or a balancer in front of several) whose first
 * turn asks for `ship_release`; resolves once the stream says the call waits, with what is
 * needed to answer it and the rest of the stream's text (a failed stream's error at its end).
 */
export async function chatThatWaits(baseUrl: string, llm: ReplayLlmServer, version: string, apiKey = 'unused'): Promise<{ executionId: string; stepId: string; rest: Promise<string> }> {
  llm.replyOnce(openAiStream([`Shipping. [TOOL: ship_release {"version": "${version}"}]`]), openAiStream(['Done.']));
  const client = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey, maxRetries: 0 });
  const { data: stream, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: `ship ${version}` }] }).withResponse();
  const iterator = stream[Symbol.asyncIterator]();
  let stepId: string | undefined;
  let seen = '';
  while (stepId === undefined) {
    const next = await iterator.next();
    if (next.done) throw new Error(`the stream ended before the call waited: ${seen}`);
    seen += next.value.choices[0]?.delta.content ?? '';
    const kiwi = (next.value as unknown as { kiwi?: Record<string, unknown> }).kiwi;
    if (kiwi?.['type'] === 'approval') stepId = String(kiwi['stepId']);
  }
  const rest = (async () => {
    let text = '';
    try {
      for (let next = await iterator.next(); !next.done; next = await iterator.next()) text += next.value.choices[0]?.delta.content ?? '';
    } catch (error) {
      text += String(error);
    }
    return text;
  })();
  return { executionId: response.headers.get('x-kiwi-execution-id') as string, stepId, rest };
}
