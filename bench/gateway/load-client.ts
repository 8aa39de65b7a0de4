import { Agent, type Dispatcher } from 'undici';
import { INTENT_MODEL, INTENT_TURN_PIECES, PLAIN_MODEL, RESULTS_PREFIX } from './bench-upstream.js';
import { timeJson, timeStream } from './http-timing.js';

/**
 * The client side of the gateway bench; it runs in its own process (bench-child.ts), so its
 * CPU does not compete inside the gateway's event loop. `direct` and `gateway` are the two
 * chat completion URLs: the upstream's own and the gateway's.
 */

export interface Targets {
  direct: string;
  gateway: string;
  /** The bare reference proxy (reference-proxy.ts), measured alongside in pass-through when given. */
  proxy?: string;
}

export interface StreamSamples {
  headers: number[];
  firstToken: number[];
  total: number[];
}

export interface PairedSamples {
  direct: StreamSamples;
  gateway: StreamSamples;
  proxy?: StreamSamples;
}

export interface LoadResult {
  requests: number;
  errors: number;
  firstError?: string;
  seconds: number;
  rps: number;
  latency: number[];
  /** Through a gateway in the bench's process: its main thread's busy time per request (event-loop utilisation), in µs. */
  threadUsPerRequest?: number;
  /** The same, the gateway process's CPU time on all its threads per request, in µs. */
  processUsPerRequest?: number;
}

export interface IntentSample {
  totalMs: number;
  turn1Ms: number;
  turn2Ms: number;
  toolMs: number;
  tool: string;
  status: string;
}

const USER = 'Say a few words.';
const INTENT_USER = 'What is in package.json?';

export const plainBody = (stream: boolean, user: string = USER): string => JSON.stringify({ model: PLAIN_MODEL, messages: [{ role: 'user', content: user }], stream });
const intentBody = JSON.stringify({ model: INTENT_MODEL, messages: [{ role: 'user', content: INTENT_USER }], stream: true });
/** Turn 2 as the gateway sends it: turn 1 back as the assistant, then the results message. */
const turn2Body = JSON.stringify({
  model: INTENT_MODEL,
  messages: [
    { role: 'user', content: INTENT_USER },
    { role: 'assistant', content: INTENT_TURN_PIECES.join('') },
    { role: 'user', content: `${RESULTS_PREFIX}the tool intent in your last reply, from the Kiwi gateway:\n\n[1] Intent: read_file {"path": "package.json"}\nCall: read_file {"path":"package.json"}\nResult:\n{"name":"bench"}` },
  ],
  stream: true,
});

/** Context the gateway hands the resolver for the bench intent: the user's request and the turn's text before it. */
export const INTENT_CONTEXT = `${INTENT_USER}\n\n${INTENT_TURN_PIECES.slice(0, 2).join('')}`;

export function createLoadClient(): { run(cmd: string, args: unknown): Promise<unknown>; close(): Promise<void> } {
  // Keep-alive connections reused for the whole run, as an agent's SDK does.
  const agent: Dispatcher = new Agent({ connections: 256, keepAliveTimeout: 120_000, keepAliveMaxTimeout: 120_000, pipelining: 1 });

  /**
   * Alternating pairs (or triples with the reference proxy); the order rotates each time, so no
   * path always goes first.
   */
  async function passThrough(t: Targets & { n: number; warmup: number; newMessages?: boolean }): Promise<PairedSamples> {
    const empty = (): StreamSamples => ({ headers: [], firstToken: [], total: [] });
    const out: PairedSamples = { direct: empty(), gateway: empty(), ...(t.proxy === undefined ? {} : { proxy: empty() }) };
    const paths = t.proxy === undefined ? (['direct', 'gateway'] as const) : (['direct', 'gateway', 'proxy'] as const);
    const same = plainBody(true);
    for (let i = 0; i < t.warmup + t.n; i++) {
      // A new user message each round, as in a chat: nothing the gateway keeps per message (the tool menu) is reused.
      const body = t.newMessages ? plainBody(true, `${USER} Round ${i} of this run.`) : same;
      for (let j = 0; j < paths.length; j++) {
        const which = paths[(i + j) % paths.length] as (typeof paths)[number];
        const r = await timeStream(agent, t[which] as string, body, 'fast');
        const samples = out[which];
        if (i < t.warmup || samples === undefined) continue;
        samples.headers.push(r.headersMs);
        samples.firstToken.push(r.firstTokenMs);
        samples.total.push(r.totalMs);
      }
    }
    return out;
  }

  async function nonStream(t: Targets & { n: number; warmup: number }): Promise<{ direct: number[]; gateway: number[] }> {
    const out = { direct: [] as number[], gateway: [] as number[] };
    const body = plainBody(false);
    for (let i = 0; i < t.warmup + t.n; i++) {
      const order = i % 2 === 0 ? (['direct', 'gateway'] as const) : (['gateway', 'direct'] as const);
      for (const which of order) {
        const r = await timeJson(agent, t[which], body);
        if (i >= t.warmup) out[which].push(r.totalMs);
      }
    }
    return out;
  }

  /** `concurrency` clients, each sending its next request as soon as the last one ended, for `seconds`. */
  async function load(a: { url: string; concurrency: number; seconds: number }): Promise<LoadResult> {
    const body = plainBody(true);
    const latency: number[] = [];
    let errors = 0;
    let firstError: string | undefined;
    const t0 = performance.now();
    const end = t0 + a.seconds * 1000;
    const client = async (): Promise<void> => {
      while (performance.now() < end) {
        try {
          latency.push((await timeStream(agent, a.url, body, 'fast')).totalMs);
        } catch (error) {
          errors++;
          firstError ??= error instanceof Error ? error.message : String(error);
        }
      }
    };
    await Promise.all(Array.from({ length: a.concurrency }, client));
    const seconds = (performance.now() - t0) / 1000;
    return { requests: latency.length, errors, ...(firstError === undefined ? {} : { firstError }), seconds, rps: latency.length / seconds, latency };
  }

  /** Per iteration: the two upstream turns direct, then the whole request via the gateway. */
  async function intents(t: Targets & { n: number; warmup: number }): Promise<IntentSample[]> {
    const out: IntentSample[] = [];
    for (let i = 0; i < t.warmup + t.n; i++) {
      const turn1 = await timeStream(agent, t.direct, intentBody, 'full');
      const turn2 = await timeStream(agent, t.direct, turn2Body, 'full');
      const via = await timeStream(agent, t.gateway, intentBody, 'full');
      const result = (via.kiwi ?? []).find((k): k is { type: 'result'; tool: string; status: string; durationMs: number } => (k as { type?: unknown }).type === 'result');
      if (result === undefined) {
        const unresolved = (via.kiwi ?? []).find((k) => (k as { type?: unknown }).type === 'unresolved');
        throw new Error(`the intent request via the gateway ran no tool (${unresolved === undefined ? 'no result event' : `unresolved: ${JSON.stringify(unresolved).slice(0, 300)}`})`);
      }
      if (i < t.warmup) continue;
      out.push({ totalMs: via.totalMs, turn1Ms: turn1.totalMs, turn2Ms: turn2.totalMs, toolMs: result.durationMs, tool: result.tool, status: result.status });
    }
    return out;
  }

  return {
    async run(cmd, args) {
      switch (cmd) {
        case 'passThrough':
          return passThrough(args as Targets & { n: number; warmup: number; newMessages?: boolean });
        case 'nonStream':
          return nonStream(args as Targets & { n: number; warmup: number });
        case 'load':
          return load(args as { url: string; concurrency: number; seconds: number });
        case 'intents':
          return intents(args as Targets & { n: number; warmup: number });
        default:
          throw new Error(`unknown client command ${cmd}`);
      }
    },
    close: () => agent.close(),
  };
}
