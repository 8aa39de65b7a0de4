import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateArgs } from '../../src/executor/validate-args.js';
import { openGgufChatModel, type LocalChatModel } from '../../src/llm/gguf-chat-model.js';
import { createLocalModelFallback, IN_PROCESS } from '../../src/resolver/local-model-fallback.js';
import type { FallbackAnswer } from '../../src/resolver/model-fallback.js';
import { makeTool } from '../helpers/make-tool.js';
import { writeTinyGguf } from '../helpers/tiny-gguf.js';

/**
 * The fallback model run in the gateway's process (node-llama-cpp, CPU, its prebuilt binary) on a
 * tiny llama model with random weights that this test writes (test/helpers/tiny-gguf.ts). What
 * it chooses means nothing; the test proves that it loads, that the grammar holds its answer to a
 * candidate's schema, and that the time cap and the request's signal stop it. Not accuracy.
 */

const TOOLS = [
  // Parameters a random model finishes within the cap: enums and a boolean. (Not an integer: the
  // grammar bounds no number's digits, and a random model may write 400 of them, which validation
  // then refuses as it should.)
  makeTool({
    id: 'home.set_light',
    type: 'api',
    description: 'Switch a light on or off',
    parameters: [
      { name: 'room', type: 'string', required: true, enum: ['kitchen', 'hall'] },
      { name: 'on', type: 'boolean', required: true },
      { name: 'level', type: 'integer', required: false, enum: [1, 2, 3] },
    ],
  }),
  makeTool({ id: 'home.lock_door', type: 'api', description: 'Lock a door', parameters: [{ name: 'door', type: 'string', required: true, enum: ['front', 'back'] }] }),
];
const INTENTS = ['turn on the kitchen light', 'lock the front door', 'close the back door', 'light'];
const WHERE = '.ai/config/resolver.yaml: fallback.model_file';

let dir: string;
let file: string;
let model: LocalChatModel;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'kiwi-gguf-'));
  file = path.join(dir, 'tiny.gguf');
  await writeTinyGguf(file);
  // One thread: the model is tiny, and spinning threads on a busy machine only slow it.
  model = await openGgufChatModel({ file, where: WHERE, threads: 1 });
}, 60_000);

afterAll(async () => {
  await model?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The model with a hook run once its generation has begun. */
function onGenerate(hook: () => void): LocalChatModel {
  return {
    ...model,
    generate(request, signal) {
      const running = model.generate(request, signal);
      hook();
      return running;
    },
  };
}

describe('the fallback model in the gateway process (GGUF through node-llama-cpp)', () => {
  it('loads the file and answers within the grammar: a shown candidate with arguments its schema accepts, or a decline; tokens counted, no dollars', async () => {
    const fallback = createLocalModelFallback({ model, candidates: 2, timeoutMs: 60_000 });
    expect(fallback).toMatchObject({ model: 'tiny.gguf', upstream: IN_PROCESS, candidates: 2 });
    const answers: FallbackAnswer[] = [];
    for (const intent of INTENTS) answers.push(await fallback.ask({ intent, tools: TOOLS, context: 'the lights are off' }));
    const calls = answers.flatMap((a) => (a.kind === 'call' ? [a] : []));
    expect(calls.length).toBeGreaterThan(0);
    for (const a of answers) {
      expect(a.kind).not.toBe('failed');
      expect(a.cost.inputTokens).toBeGreaterThan(0);
      expect(a.cost.outputTokens).toBeGreaterThan(0);
      expect(a.cost).not.toHaveProperty('usd');
      expect(a.cost).not.toHaveProperty('estimated');
    }
    for (const call of calls) {
      expect(TOOLS).toContain(call.tool);
      expect(() => validateArgs(call.tool, call.arguments)).not.toThrow();
      // An optional parameter written null is left out, not passed on as null.
      expect(Object.values(call.arguments)).not.toContain(null);
    }
  });

  it('answers failed, saying why, when the time cap ends the generation, and answers the next ask', async () => {
    const capped = await createLocalModelFallback({ model, timeoutMs: 1 }).ask({ intent: INTENTS[0] as string, tools: TOOLS });
    expect(capped).toMatchObject({ kind: 'failed', why: 'no answer within 1 ms' });
    const next = await createLocalModelFallback({ model, timeoutMs: 60_000 }).ask({ intent: INTENTS[0] as string, tools: TOOLS });
    expect(next.kind).not.toBe('failed');
  });

  it("stops a generation when the request's signal aborts, throwing its reason, and answers the next ask", async () => {
    const controller = new AbortController();
    const reason = new Error('the client went away');
    const fallback = createLocalModelFallback({ model: onGenerate(() => controller.abort(reason)), timeoutMs: 60_000 });
    await expect(fallback.ask({ intent: INTENTS[1] as string, tools: TOOLS, signal: controller.signal })).rejects.toBe(reason);
    const next = await createLocalModelFallback({ model, timeoutMs: 60_000 }).ask({ intent: INTENTS[1] as string, tools: TOOLS });
    expect(next.kind).not.toBe('failed');
  });

  it('generates one answer at a time: an ask waits its turn, and leaves the queue when its signal aborts', async () => {
    const fallback = createLocalModelFallback({ model, timeoutMs: 60_000 });
    const controller = new AbortController();
    const first = fallback.ask({ intent: INTENTS[2] as string, tools: TOOLS });
    const waiting = fallback.ask({ intent: INTENTS[2] as string, tools: TOOLS, signal: controller.signal });
    const third = fallback.ask({ intent: INTENTS[3] as string, tools: TOOLS });
    controller.abort(new Error('gave up waiting'));
    await expect(waiting).rejects.toThrow('gave up waiting');
    expect((await first).kind).not.toBe('failed');
    expect((await third).kind).not.toBe('failed');
  });

  it('refuses at start, saying what to fix, a file that is missing, a folder, or not a GGUF model', async () => {
    await expect(openGgufChatModel({ file: path.join(dir, 'absent.gguf'), where: WHERE })).rejects.toThrow(/fallback\.model_file: .*absent\.gguf does not exist; fetch a GGUF model there first \(docs\/resolution\.md "The fallback model"/);
    mkdirSync(path.join(dir, 'models'));
    await expect(openGgufChatModel({ file: path.join(dir, 'models'), where: WHERE })).rejects.toThrow(/models is not a regular file; name the \.gguf file itself/);
    const text = path.join(dir, 'model.gguf');
    writeFileSync(text, '<html>404 Not Found</html>');
    await expect(openGgufChatModel({ file: text, where: WHERE })).rejects.toThrow(/model\.gguf is not a GGUF model \(it does not start with "GGUF"\)/);
    // A GGUF header with nothing after it: node-llama-cpp's failure, named with the file.
    const cut = path.join(dir, 'cut.gguf');
    writeFileSync(cut, Buffer.from('GGUF\x03\x00\x00\x00', 'latin1'));
    await expect(openGgufChatModel({ file: cut, where: WHERE })).rejects.toThrow(/cut\.gguf could not be loaded by node-llama-cpp \(.*\); check that it is a complete GGUF model/);
  });

  it('closes once: an ask after close fails, saying so, instead of touching a freed model', async () => {
    const second = await openGgufChatModel({ file, where: WHERE, threads: 1 });
    const fallback = createLocalModelFallback({ model: second });
    await fallback.close?.();
    await fallback.close?.();
    expect(await fallback.ask({ intent: INTENTS[0] as string, tools: TOOLS })).toMatchObject({ kind: 'failed', why: expect.stringMatching(/tiny\.gguf is closed/) });
  });
});
