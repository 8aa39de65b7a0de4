import { rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../../src/app/run-cli.js';
import type { Listener } from '../../../src/http/server/listen.js';
import { serveGateway, type ServedGateway } from '../../helpers/serve-gateway.js';
import { copyDemoProject } from '../../helpers/demo-project.js';

/**
 * `kiwi chat` against the gateway as `npm start` runs it: the demo `.ai/` (with a four-word
 * README.md) and the offline demo model, over 127.0.0.1. Small local servers stand in where a
 * gateway cannot be made to fail on cue (a key refused, a stream that never ends).
 */

let root: string;
let server: Listener;
let served: ServedGateway | undefined;
let env: Record<string, string | undefined>;

beforeAll(async () => {
  root = copyDemoProject('kiwi-chat-');
  served = await serveGateway(root);
  ({ server, env } = served);
}, 120_000);

afterAll(async () => {
  await served?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

interface Run {
  code: number;
  /** Everything on stdout, as a terminal would show it. */
  out: string;
  err: string;
}

async function chat(argv: string[], options: { env?: Record<string, string | undefined>; signal?: AbortSignal; onWrite?: (text: string) => void; lines?: boolean } = {}): Promise<Run> {
  let out = '';
  const err: string[] = [];
  const io = {
    out: (line: string) => (out += `${line}\n`),
    err: (line: string) => err.push(line),
    ...(options.lines ? {} : { write: (text: string) => ((out += text), options.onWrite?.(text)) }),
  };
  const code = await runCli(['chat', ...argv], { env: options.env ?? env, cwd: root, io, ...(options.signal ? { signal: options.signal } : {}) });
  return { code, out, err: err.join('\n') };
}

/** A local HTTP server that answers with `handle`; closed after the test. */
async function withServer(handle: (req: IncomingMessage, res: ServerResponse) => void, run: (url: string, srv: Server) => Promise<void>): Promise<void> {
  const srv = createServer(handle);
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  try {
    await run(`http://127.0.0.1:${(srv.address() as { port: number }).port}`, srv);
  } finally {
    srv.closeAllConnections();
    await new Promise<void>((resolve) => srv.close(() => resolve()));
  }
}

/** A port nothing listens on: one the OS just handed out and took back. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

describe('kiwi chat with a running gateway', () => {
  it('prints the demo conversation: the text, the plain-words intent, the side request that wrote its call, the call and its result', async () => {
    const r = await chat(['how many words are in the README?', '--url', server.url]);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const lines = r.out.split('\n');
    const at = (pattern: RegExp): number => lines.findIndex((l) => pattern.test(l));
    const steps = [
      /^\(offline demo model\) I will count them with a tool rather than guess\.$/,
      /^→ intent: count the words in "README\.md"$/,
      /^ {2}side request: kiwi-demo wrote the call \(\d+ tokens in, \d+ out\)$/,
      /^→ call word_count \{"path":"README\.md"\}$/,
      /^ {2}result: \{.*"words": 4.*\}$/,
      /^\(demo model\) The result above gives the lines, words and characters of README\.md\./,
      /^\(done: 2 turns, 1 tool call\)$/,
    ];
    const found = steps.map(at);
    expect(found.every((i) => i >= 0), `missing ${String(steps[found.indexOf(-1)])} in:\n${r.out}`).toBe(true);
    expect([...found].sort((a, b) => a - b)).toEqual(found);
    // The rendered forms the gateway puts in the content are not repeated: each step shows once.
    expect(r.out).not.toContain('[TOOL:');
    expect(r.out).not.toContain('```');
  });

  it('prints a denied call as denied, and the same lines when the output cannot stream part of a line', async () => {
    const r = await chat(['read /etc/passwd', '--url', server.url], { lines: true });
    expect(r.code).toBe(0);
    expect(r.out).toContain('→ call read_file {"path":"/etc/passwd"}\n');
    expect(r.out).toMatch(/\n {2}denied: .*\/etc\/passwd/);
    expect(r.out).toMatch(/^\(offline demo model\) Let me try to read it\.\n/);
  });

  it('shows a call that waits for a person, with the command that answers it, and the command works', async () => {
    let answered: Promise<number> | undefined;
    const r = await chat(['save a note that the docs ship on Friday', '--url', server.url], {
      onWrite(text) {
        const command = /answer within \d+ s: (kiwi approvals grant \S+)/.exec(text)?.[1];
        if (command === undefined || answered !== undefined) return;
        const stepId = command.split(' ').at(-1) as string;
        answered = runCli(['approvals', 'deny', stepId, '--reason', 'not today', '--url', server.url], { env, cwd: root, io: { out: () => undefined, err: () => undefined } });
      },
    });
    expect(r.code).toBe(0);
    expect(await answered).toBe(0);
    expect(r.out).toMatch(/→ call save_note .*\n {2}waits for approval: save_note \(.*requires_approval.*\)\n {2}answer within \d+ s: kiwi approvals grant [0-9a-f-]{36} {3}\(or: kiwi approvals deny [0-9a-f-]{36} --reason TEXT\)\n/);
    expect(r.out).toMatch(/\n {2}denied: .*not today/);
    expect(r.out).toContain(`  or in the console: ${server.url}/ui/approvals\n`);
  });

  it('opens the console without a login on a keyless loopback gateway, and lists a waiting call there', async () => {
    let listed: string | undefined;
    const r = await chat(['save a note that the console works', '--url', server.url], {
      onWrite(text) {
        const stepId = /kiwi approvals grant (\S+)/.exec(text)?.[1];
        if (stepId === undefined || listed !== undefined) return;
        listed = '';
        void (async () => {
          // The local operator's session starts at the login page, without a key.
          const login = await fetch(`${server.url}/ui/login`, { redirect: 'manual' });
          expect(login.status).toBe(303);
          const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] as string;
          listed = await (await fetch(`${server.url}/ui/approvals`, { headers: { cookie } })).text();
          const csrf = /name="_csrf" value="([^"]+)"/.exec(listed)?.[1] ?? '';
          await fetch(`${server.url}/ui/approvals/${stepId}`, { method: 'POST', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: `_csrf=${csrf}&decision=deny&reason=checked`, redirect: 'manual' });
        })();
      },
    });
    expect(r.code).toBe(0);
    expect(listed).toMatch(/<h2><span class="tool">save_note<\/span> for <span class="client">local<\/span><\/h2>/);
    expect(r.out).toMatch(/\n {2}denied: .*checked/);
  });

  it('prints the events as JSON lines with --json, the text as "text" events; a base URL ending in /v1 works', async () => {
    const r = await chat(['how many words are in the README?', '--json', '--url', `${server.url}/v1/`]);
    expect(r.code).toBe(0);
    const events = r.out.trim().split('\n').map((l) => JSON.parse(l) as { type: string; text?: string; call?: unknown });
    expect(events.filter((e) => e.type !== 'text').map((e) => e.type)).toEqual(['start', 'intent', 'call', 'result', 'turn', 'finish']);
    expect(events.find((e) => e.type === 'call')).toMatchObject({ call: { tool: 'word_count', arguments: { path: 'README.md' } }, fallback: { model: 'kiwi-demo', outcome: 'called' } });
    const text = events.filter((e) => e.type === 'text').map((e) => e.text).join('');
    expect(text).toContain('I will count them with a tool rather than guess.');
    expect(text).toContain('The result above gives the lines');
  });
});

describe('kiwi chat when the gateway is not there or refuses', () => {
  it('says to start the gateway, and which URL it tried, when nothing listens (--url and KIWI_PORT)', async () => {
    const port = await closedPort();
    const tried = `http://127.0.0.1:${port}/v1/chat/completions`;
    const viaUrl = await chat(['hello', '--url', `http://127.0.0.1:${port}`]);
    expect(viaUrl.code).toBe(1);
    expect(viaUrl.out).toBe('');
    expect(viaUrl.err).toBe(`kiwi chat: UPSTREAM_HTTP: no gateway answers at ${tried} (ECONNREFUSED); start one with \`npm start\` (or \`kiwi serve\`) in another terminal, or pass --url (or set KIWI_PORT) to reach the one that runs`);
    const viaPort = await chat(['hello'], { env: { ...env, KIWI_PORT: String(port) } });
    expect(viaPort.code).toBe(1);
    expect(viaPort.err).toContain(`no gateway answers at ${tried} (ECONNREFUSED); start one with \`npm start\``);
  });

  it('sends the key from KIWI_API_KEY as a Bearer token, and shows the gateway\'s refusal with a hint', async () => {
    let authorization: string | undefined;
    await withServer(
      (req, res) => {
        authorization = req.headers.authorization;
        res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'this client key is not known', type: 'authentication_error' } }));
      },
      async (url) => {
        const r = await chat(['hello', '--url', url], { env: { ...env, KIWI_API_KEY: 'kiwi_abc' } });
        expect(authorization).toBe('Bearer kiwi_abc');
        expect(r.code).toBe(1);
        expect(r.err).toBe(`kiwi chat: UNAUTHORIZED: the gateway at ${url}/v1/chat/completions answered HTTP 401: this client key is not known; kiwi chat sends --key (or KIWI_API_KEY) as the client key`);
        await chat(['hello', '--url', url, '--key', 'kiwi_flag'], { env: { ...env, KIWI_API_KEY: 'kiwi_abc' } });
        expect(authorization).toBe('Bearer kiwi_flag');
      },
    );
  });

  it('asks the demo model without --model, and says which real models the gateway serves besides', async () => {
    const asked: string[] = [];
    await withServer(
      (req, res) => {
        if (req.method === 'GET') {
          asked.push(`GET ${req.url}`);
          return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: [{ id: 'kiwi-demo' }, { id: 'gpt-*' }, { id: 'qwen3:0.6b' }] }));
        }
        let body = '';
        req.on('data', (c: Buffer) => (body += c.toString()));
        req.on('end', () => {
          asked.push(`POST ${(JSON.parse(body) as { model: string }).model}`);
          res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'stop here' } }));
        });
      },
      async (url) => {
        const r = await chat(['hello', '--url', url], { env });
        expect(r.err.split('\n')[0]).toBe('kiwi chat: asking the offline demo model kiwi-demo; the gateway also serves the model qwen3:0.6b: pass --model NAME to ask one');
        expect(asked).toEqual(['GET /v1/models', 'POST kiwi-demo']);
        asked.length = 0;
        await chat(['hello', '--url', url, '--model', 'qwen3:0.6b'], { env });
        expect(asked).toEqual(['POST qwen3:0.6b']);
      },
    );
  });

  it("names the gateway's refusals by what refused: a spent budget, a model it does not serve", async () => {
    const answers = [
      [429, { error: { message: 'the budget of client ci is spent', type: 'rate_limit_error', code: 'budget_exceeded' } }],
      [404, { error: { message: 'no upstream serves the model "nope"', type: 'invalid_request_error', code: 'model_not_found' } }],
    ] as const;
    let n = 0;
    await withServer(
      (req, res) => {
        if (req.method === 'GET') return void res.writeHead(404).end();
        const [status, body] = answers[n++] ?? answers[0];
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      },
      async (url) => {
        expect((await chat(['hello', '--url', url], { env })).err).toMatch(/^kiwi chat: BUDGET_EXCEEDED: the gateway at .* answered HTTP 429: the budget of client ci is spent/);
        expect((await chat(['hello', '--url', url, '--model', 'nope'], { env })).err).toMatch(/^kiwi chat: UNKNOWN_MODEL: the gateway at .* answered HTTP 404: no upstream serves the model "nope"/);
      },
    );
  });

  it('reports an error the gateway sends mid-stream, after the text so far, and a stream cut short', async () => {
    const frame = (value: unknown): string => `data: ${JSON.stringify(value)}\n\n`;
    let cut = false;
    await withServer(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(frame({ choices: [{ delta: { content: 'Partial answer' } }] }));
        if (cut) res.end();
        else res.end(frame({ error: { message: 'upstream answered 500', type: 'api_error' } }));
      },
      async (url) => {
        const failed = await chat(['hello', '--url', url]);
        expect(failed).toEqual({ code: 1, out: 'Partial answer\n', err: 'kiwi chat: UPSTREAM_HTTP: the gateway stopped the answer: upstream answered 500' });
        cut = true;
        const short = await chat(['hello', '--url', url]);
        expect(short.code).toBe(1);
        expect(short.err).toBe(`kiwi chat: UPSTREAM_HTTP: the stream from ${url}/v1/chat/completions ended before the answer finished; check the gateway's log`);
      },
    );
  });

  it('escapes terminal control sequences from the stream and cuts a long result to its first lines', async () => {
    const frame = (value: unknown): string => `data: ${JSON.stringify(value)}\n\n`;
    const output = Array.from({ length: 10 }, (_, i) => `line ${i + 1} ${'x'.repeat(30)}`).join('\n');
    await withServer(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(frame({ choices: [{ delta: { content: '\u001b]0;owned\u0007Hi\r\nthere \u202e' } }] }));
        res.write(frame({ choices: [{ delta: { content: '' } }], kiwi: { type: 'call', index: 0, callId: 'c1', intent: 'x', call: { tool: 'cat\u001b[2J', arguments: {} }, confidence: 1 } }));
        res.write(frame({ choices: [{ delta: { content: 'rendered' } }], kiwi: { type: 'result', index: 0, callId: 'c1', tool: 'cat', status: 'ok', isError: false, text: output, durationMs: 1 } }));
        res.write(frame({ choices: [{ delta: {} }], kiwi: { type: 'some_future_event', detail: 1 } }));
        res.end(frame({ choices: [{ delta: {}, finish_reason: 'stop' }], kiwi: { type: 'finish', reason: 'stop', usage: {}, turns: 1, toolCalls: 1, limit: 'tool_calls' } }) + 'data: [DONE]\n\n');
      },
      async (url) => {
        const r = await chat(['hello', '--url', url]);
        expect(r.code).toBe(0);
        expect(r.out).toBe(
          [
            '\\u001b]0;owned\\u0007Hi',
            'there \\u202e',
            '→ call cat\\u001b[2J {}',
            '  result:',
            `    line 1 ${'x'.repeat(30)}`,
            `    line 2 ${'x'.repeat(30)}`,
            `    line 3 ${'x'.repeat(30)}`,
            '    … (7 more lines)',
            "(stopped by the gateway's tool_calls limit: 1 turn, 1 tool call)",
            '',
          ].join('\n'),
        );
      },
    );
  });

  it('aborts the request on Ctrl-C (the signal), so the gateway sees the connection close', async () => {
    const controller = new AbortController();
    let closed!: () => void;
    const connectionClosed = new Promise<void>((resolve) => (closed = resolve));
    await withServer(
      (req, res) => {
        if (req.method === 'GET') return void res.writeHead(404).end();
        res.on('close', () => closed());
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`data: ${JSON.stringify({ choices: [{ delta: { content: 'Thinking' } }] })}\n\n`);
      },
      async (url) => {
        const r = await chat(['hello', '--url', url], { signal: controller.signal, onWrite: () => controller.abort() });
        await connectionClosed;
        expect(r.code).toBe(1);
        expect(r.out).toBe('Thinking\n');
        expect(r.err).toMatch(/^kiwi chat: TOOL_CANCELLED: cancelled; the gateway stops the request/);
      },
    );
  });

  it('rejects bad flags with a usage line (exit 2)', async () => {
    const cases: Array<[string[], Record<string, string>, RegExp]> = [
      [[], {}, /give the message to send, in quotes; usage: kiwi chat "MESSAGE"/],
      [['  '], {}, /give the message to send/],
      [['hi', '--nope'], {}, /Unknown option '--nope'.*usage: kiwi chat/],
      [['hi', '--url'], {}, /Option '--url <value>' argument missing; usage: kiwi chat/],
      [['hi', '--url', 'not a url'], {}, /--url "not a url" is not a URL; pass the gateway's address/],
      [['hi', '--url', 'ftp://127.0.0.1'], {}, /--url must be http:\/\/ or https:\/\/, got ftp:/],
      [['hi', '--url', 'http://u:p@127.0.0.1'], {}, /--url must not carry a user name or password/],
      [['hi', '--model', ' '], {}, /--model must name a model/],
      [['hi', '--key', 'two words'], {}, /client key \(--key or KIWI_API_KEY\) must be one word/],
      [['hi'], { KIWI_PORT: 'eighty' }, /KIWI_PORT="eighty" is not a port/],
    ];
    for (const [argv, extra, message] of cases) {
      const r = await chat(argv, { env: { ...env, ...extra } });
      expect(r.code, argv.join(' ')).toBe(2);
      expect(r.err).toMatch(/^kiwi chat: /);
      expect(r.err).toMatch(message);
      expect(r.out).toBe('');
    }
  });
});
