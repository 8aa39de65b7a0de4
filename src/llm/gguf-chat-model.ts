import { open, realpath, stat } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import type { Llama, LlamaChat, LlamaContext, LlamaModel, GbnfJsonSchema } from 'node-llama-cpp';
import { describeError, KiwiError } from '../base/errors.js';

/**
 * A GGUF model run in this process through node-llama-cpp, on the CPU, its output held to a JSON
 * schema by a grammar. node-llama-cpp is imported only when a model is opened, so a gateway that
 * names no model file never loads the native library. Its prebuilt binary is used as installed:
 * nothing is built or downloaded (`build: 'never'`, `skipDownload`), and no GPU is looked for.
 */

export interface LocalChatRequest {
  system: string;
  user: string;
  /** The JSON schema the answer must match, in node-llama-cpp's subset (every listed property required). */
  schema: Record<string, unknown>;
  maxTokens: number;
}

export interface LocalChatAnswer {
  text: string;
  /** How it stopped: the grammar's end (or the model's end of text), the token cap, or the signal. */
  stop: 'done' | 'max-tokens' | 'aborted';
  /** Tokens the model read (a prefix kept from the last generation is not read again) and wrote. */
  inputTokens: number;
  outputTokens: number;
}

export interface LocalChatModel {
  /** The file's name, for notes and the audit. */
  readonly name: string;
  /** The file, as opened (its real path). */
  readonly file: string;
  /** Resolves when it stops, however it stops: an aborted signal ends it with what was written so far. */
  generate(request: LocalChatRequest, signal: AbortSignal): Promise<LocalChatAnswer>;
  close(): Promise<void>;
}

export interface GgufChatModelOptions {
  file: string;
  /** Where the file was named, for the errors: `.ai/config/resolver.yaml: fallback.model_file`. */
  where: string;
  /** CPU threads of one generation; default half the cores (at least 1). */
  threads?: number;
  /** How many callers may wait their turn while one generates; default 16. */
  maxWaiting?: number;
  log?: (message: string) => void;
}

const GGUF_MAGIC = Buffer.from('GGUF', 'latin1');
/** The prompt (intent, context, a few schemas) and the answer fit easily; a larger window only costs memory. */
const MAX_CONTEXT_TOKENS = 4096;
const DEFAULT_MAX_WAITING = 16;

export async function openGgufChatModel(options: GgufChatModelOptions): Promise<LocalChatModel> {
  const file = await checkedGgufFile(options.file, options.where);
  const { getLlama, LlamaChat, LlamaLogLevel } = await import('node-llama-cpp');
  let llama: Llama;
  try {
    llama = await getLlama({
      gpu: false,
      build: 'never',
      skipDownload: true,
      progressLogs: false,
      logLevel: LlamaLogLevel.error,
      logger: (_level, message) => options.log?.(`${path.basename(file)}: ${message.trim()}`),
    });
  } catch (error) {
    throw new KiwiError('INVALID_INPUT', `${options.where}: node-llama-cpp has no working prebuilt binary for this machine (${describeError(error)}), and the gateway builds none; serve the model with llama.cpp's server or Ollama and name it with fallback.model instead`, { cause: error });
  }
  let model: LlamaModel | undefined;
  let context: LlamaContext | undefined;
  let chat: LlamaChat;
  try {
    model = await llama.loadModel({ modelPath: file, gpuLayers: 0 });
    // llama.cpp's threads spin while they wait for each other: more of them than free cores makes
    // every token slower, and the gateway shares the machine with its tools and requests.
    const threads = options.threads ?? Math.max(1, Math.floor(availableParallelism() / 2));
    context = await model.createContext({ contextSize: { max: MAX_CONTEXT_TOKENS }, sequences: 1, threads });
    chat = new LlamaChat({ contextSequence: context.getSequence() });
  } catch (error) {
    await context?.dispose();
    await model?.dispose();
    await llama.dispose();
    throw new KiwiError('INVALID_INPUT', `${options.where}: ${file} could not be loaded by node-llama-cpp (${describeError(error)}); check that it is a complete GGUF model of an architecture llama.cpp runs`, { cause: error });
  }
  const loaded = { llama, chat };
  const sequence = chat.sequence;
  const turns = createTurns(options.maxWaiting ?? DEFAULT_MAX_WAITING);
  let closed = false;

  async function generate(request: LocalChatRequest, signal: AbortSignal): Promise<LocalChatAnswer> {
    if (closed) throw new KiwiError('UNAVAILABLE', `${path.basename(file)} is closed`);
    const none = { inputTokens: 0, outputTokens: 0 };
    if (!(await turns.take(signal))) return { text: '', stop: 'aborted', ...none };
    try {
      const grammar = await loaded.llama.createGrammarForJsonSchema<GbnfJsonSchema>(request.schema as GbnfJsonSchema);
      const before = sequence.tokenMeter.getState();
      const used = (): { inputTokens: number; outputTokens: number } => {
        const d = sequence.tokenMeter.diff(before);
        return { inputTokens: d.usedInputTokens, outputTokens: d.usedOutputTokens };
      };
      try {
        const response = await loaded.chat.generateResponse(
          [
            { type: 'system', text: request.system },
            { type: 'user', text: request.user },
            { type: 'model', response: [] },
          ],
          // No thinking: the grammar is the whole answer, and a model that thinks first spends the time cap on it.
          { grammar, maxTokens: request.maxTokens, temperature: 0, signal, stopOnAbortSignal: true, budgets: { thoughtTokens: 0 } },
        );
        const stop = response.metadata.stopReason === 'maxTokens' ? 'max-tokens' : response.metadata.stopReason === 'abort' ? 'aborted' : 'done';
        return { text: response.response, stop, ...used() };
      } catch (error) {
        // Aborted before the first token, node-llama-cpp throws the signal's reason instead.
        if (signal.aborted) return { text: '', stop: 'aborted', ...used() };
        throw error;
      }
    } finally {
      turns.give();
    }
  }

  return {
    name: path.basename(file),
    file,
    generate,
    async close() {
      if (closed) return;
      closed = true;
      loaded.chat.dispose();
      await context?.dispose();
      await model?.dispose();
      await loaded.llama.dispose();
    },
  };
}

/**
 * One generation at a time: the model has one context sequence, and on the CPU two generations at
 * once would only share the same cores, each finishing later. The others wait their turn (their
 * time cap runs meanwhile) and may give up waiting through their signal; past `maxWaiting`, a
 * caller is refused at once rather than queued behind work it cannot outlast.
 */
function createTurns(maxWaiting: number): { take(signal: AbortSignal): Promise<boolean>; give(): void } {
  let busy = false;
  const waiting: (() => void)[] = [];
  return {
    take(signal) {
      if (signal.aborted) return Promise.resolve(false);
      if (!busy) {
        busy = true;
        return Promise.resolve(true);
      }
      if (waiting.length >= maxWaiting) throw new KiwiError('RATE_LIMITED', `the local model is busy: ${waiting.length} asks already wait for it`);
      return new Promise((resolve) => {
        const grant = (): void => {
          signal.removeEventListener('abort', leave);
          resolve(true);
        };
        const leave = (): void => {
          waiting.splice(waiting.indexOf(grant), 1);
          resolve(false);
        };
        waiting.push(grant);
        signal.addEventListener('abort', leave, { once: true });
      });
    },
    give() {
      const next = waiting.shift();
      if (next === undefined) busy = false;
      else next();
    },
  };
}

/** The file's real path, once it is known to be a regular file that starts as a GGUF file does. */
async function checkedGgufFile(file: string, where: string): Promise<string> {
  let real: string;
  try {
    real = await realpath(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new KiwiError('INVALID_INPUT', `${where}: ${file} ${code === 'ENOENT' ? 'does not exist' : `cannot be read (${code ?? describeError(error)})`}; fetch a GGUF model there first (docs/resolution.md "The fallback model" gives the commands), or correct the path`);
  }
  if (!(await stat(real)).isFile()) throw new KiwiError('INVALID_INPUT', `${where}: ${real} is not a regular file; name the .gguf file itself`);
  const head = Buffer.alloc(4);
  const handle = await open(real, 'r');
  try {
    await handle.read(head, 0, 4, 0);
  } finally {
    await handle.close();
  }
  if (!head.equals(GGUF_MAGIC)) throw new KiwiError('INVALID_INPUT', `${where}: ${real} is not a GGUF model (it does not start with "GGUF"); name a .gguf file, e.g. one \`npx node-llama-cpp pull\` fetched`);
  return real;
}
