import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../../src/app/run-cli.js';

const FIXTURES = path.resolve(import.meta.dirname, '../../fixtures/transitions');
const METRICS = readFileSync(path.join(FIXTURES, 'metrics.json'), 'utf8');

let root: string;

async function kiwi(argv: string[], env: Record<string, string | undefined> = {}, cwd = root): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { env, cwd, io: { out: (l) => out.push(l), err: (l) => err.push(l) } });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

/** A project folder under `root` with the fixture audit log copied in (or not). */
function project(name: string, withAudit: boolean): string {
  const dir = path.join(root, name);
  mkdirSync(path.join(dir, '.ai'), { recursive: true });
  if (withAudit) cpSync(path.join(FIXTURES, 'audit'), path.join(dir, '.ai', 'logs', 'audit'), { recursive: true });
  return dir;
}

beforeAll(() => {
  root = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-predictor-cli-')));
});
afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

describe('kiwi predictor', () => {
  it('trains from the project audit log into .ai/state/predictor.json and shows it', async () => {
    const dir = project('trained', true);
    const r = await kiwi(['predictor', 'train', '--project', dir]);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toContain('trained on 3 sessions, 10 calls, 3 distinct tools (5 files; not used: 3 unreadable lines (1 torn), 2 denied, 1 failed, 2 speculative, 1 other)');
    const file = path.join(dir, '.ai', 'state', 'predictor.json');
    expect(r.out).toContain(`wrote ${file}`);
    expect(r.out).toMatch(/search_files\s+→ read_file\s+3 {2}0\.84/);
    expect(r.out).toMatch(/\(start\)\s+→ search_files\s+3 {2}0\.72/);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ format: 'kiwi-transition-model', version: 1 });

    const shown = await kiwi(['predictor', 'show', '-n', '2'], { KIWI_PROJECT: dir });
    expect(shown.code).toBe(0);
    expect(shown.out.split('\n')).toEqual([
      `${file}: 10 calls, 3 distinct tools, 5 transitions`,
      'top transitions (count, p(next | previous)):',
      expect.stringMatching(/^ {2}search_files → read_file +3 {2}0\.84$/),
      expect.stringMatching(/^ {2}\(start\) +→ search_files +3 {2}0\.72$/),
    ]);
    const json = JSON.parse((await kiwi(['predictor', 'show', '--project', dir, '--json'])).out) as { tools: number; top: { from: string | null; to: string }[] };
    expect(json.tools).toBe(3);
    expect(json.top[1]).toMatchObject({ from: null, to: 'search_files', count: 3 });
  });

  it('writes to --out relative to the working folder, and shows --model', async () => {
    const dir = project('out', true);
    const r = await kiwi(['predictor', 'train', '--project', dir, '--out', 'elsewhere/p.json'], {}, dir);
    expect(r.code).toBe(0);
    expect(existsSync(path.join(dir, 'elsewhere', 'p.json'))).toBe(true);
    expect(existsSync(path.join(dir, 'models'))).toBe(false);
    const shown = await kiwi(['predictor', 'show', '--model', 'elsewhere/p.json'], {}, dir);
    expect(shown.code).toBe(0);
    expect(shown.out).toContain('10 calls');
  });

  it('a project without an audit log says how to get one', async () => {
    const dir = project('empty', false);
    const r = await kiwi(['predictor', 'train', '--project', dir]);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`no audit log under ${path.join(dir, '.ai', 'logs', 'audit')}`);
    expect(r.err).toMatch(/`kiwi serve`.*`kiwi run TOOL --args JSON`/);
    expect(existsSync(path.join(dir, 'models'))).toBe(false);
  });

  it('an audit log with nothing to learn from says so', async () => {
    const dir = project('denied', false);
    const day = path.join(dir, '.ai', 'logs', 'audit', '2025-03-02');
    mkdirSync(day, { recursive: true });
    cpSync(path.join(FIXTURES, 'audit', '2025-03-02', 'delta.jsonl'), path.join(day, 'delta.jsonl'));
    const r = await kiwi(['predictor', 'train', '--project', dir]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/1 audit files .* hold no allowed, successful call .*1 denied, 0 failed, 1 speculative/);
  });

  it('show without a model, or with a corrupt one, says to train', async () => {
    const dir = project('nomodel', false);
    const missing = await kiwi(['predictor', 'show', '--project', dir]);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain(`no model at ${path.join(dir, '.ai', 'state', 'predictor.json')}; create it with \`kiwi predictor train\``);
    mkdirSync(path.join(dir, '.ai', 'state'), { recursive: true });
    writeFileSync(path.join(dir, '.ai', 'state', 'predictor.json'), '{"format":"kiwi-transition-model","version":1,"tools":[["a"');
    const corrupt = await kiwi(['predictor', 'show', '--project', dir]);
    expect(corrupt.code).toBe(1);
    expect(corrupt.err).toMatch(/^kiwi predictor: INVALID_INPUT: the predictor model .*predictor\.json is not valid JSON .*re-run `kiwi predictor train`/);
  });

  it('usage mistakes exit 2 with the usage line', async () => {
    for (const argv of [['predictor'], ['predictor', 'fit'], ['predictor', 'train', 'extra'], ['predictor', 'train', '--model', 'x'], ['predictor', 'show', '--out', 'x'], ['predictor', 'show', '-n', '0']]) {
      const r = await kiwi(argv);
      expect(r.code, argv.join(' ')).toBe(2);
      expect(r.err).toMatch(/^kiwi predictor: /);
    }
  });
});

describe('kiwi stats', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  });

  async function serve(handler: Parameters<typeof createServer>[1]): Promise<number> {
    const server = createServer(handler);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as { port: number }).port;
  }

  const metricsServer = (): Promise<number> =>
    serve((req, res) => {
      // As the gateway does: JSON only to a caller that asks for it, Prometheus text to others.
      if (req.method === 'GET' && req.url === '/metrics' && req.headers.accept !== 'application/json') {
        res.setHeader('content-type', 'text/plain; version=0.0.4; charset=utf-8');
        res.end('# TYPE kiwi_prefetch_hits_total counter\nkiwi_prefetch_hits_total 30\n');
      } else if (req.method === 'GET' && req.url === '/metrics') {
        res.setHeader('content-type', 'application/json');
        res.end(METRICS);
      } else {
        res.statusCode = 404;
        res.end('not found');
      }
    });

  it('prints the prefetch counters, the hit rate and the other numbers', async () => {
    const port = await metricsServer();
    const r = await kiwi(['stats', '--url', `http://127.0.0.1:${port}/`]);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const lines = r.out.split('\n').map((l) => l.trim().replace(/\s{2,}/g, ' | '));
    expect(lines).toEqual([
      `gateway http://127.0.0.1:${port}/metrics`,
      'prefetch',
      'snapshots | 40',
      'predictions | 120',
      'prefetches | 80',
      'hits | 30',
      'misses | 10',
      'hit rate | 75.0% (hits / (hits + misses))',
      'wasted | 50',
      'speculative started | 12',
      'speculative used | 5',
      'speculative discarded | 7',
      'time saved | 4.2 s',
      'predictor time | 351 ms',
      'gateway',
      'requests.total | 17',
      'requests.errors | 1',
      'uptime | 2.1 min',
    ]);
  });

  it('finds the gateway on KIWI_PORT, and --json prints the answer as it came', async () => {
    const port = await metricsServer();
    const r = await kiwi(['stats', '--json'], { KIWI_PORT: String(port) });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toEqual(JSON.parse(METRICS));
  });

  it('a closed port is a clear error naming the URL and kiwi serve', async () => {
    const port = await serve(() => undefined);
    const closing = servers.pop() as Server;
    await new Promise<void>((resolve) => closing.close(() => resolve()));
    const r = await kiwi(['stats', '--url', `http://127.0.0.1:${port}`]);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`no Kiwi gateway answers at http://127.0.0.1:${port}/metrics (ECONNREFUSED)`);
    expect(r.err).toContain('start one with `kiwi serve`');
  });

  it('a server that is not a Kiwi gateway is a clear error', async () => {
    const port = await serve((req, res) => {
      if (req.url === '/plain/metrics') res.end('hello');
      else if (req.url === '/other/metrics') res.end('{"requests": 3}');
      else if (req.url === '/broken/metrics') {
        res.statusCode = 500;
        res.end('boom\n\u001b[31mred');
      } else if (req.url === '/huge/metrics') {
        // No content-length: the cap has to stop the stream itself.
        res.write('{"prefetch": {}, "pad": "');
        const block = 'x'.repeat(64 * 1024);
        for (let i = 0; i < 32; i++) res.write(block);
        res.end('"}');
      } else {
        res.statusCode = 404;
        res.end();
      }
    });
    const base = `http://127.0.0.1:${port}`;
    const cases: [string, RegExp][] = [
      [`${base}/nothing`, /answered 404: the server there is not a Kiwi gateway with \/metrics/],
      [`${base}/plain`, /did not answer JSON \(hello\)/],
      [`${base}/other/metrics`, /answered JSON without a "prefetch" object/],
      [`${base}/broken`, /answered HTTP 500: boom \\u001b\[31mred; check the gateway's log/],
      [`${base}/huge`, /PAYLOAD_TOO_LARGE: .* answered over 1048576 bytes/],
    ];
    for (const [url, message] of cases) {
      const r = await kiwi(['stats', '--url', url]);
      expect(r.code, url).toBe(1);
      expect(r.err).toMatch(message);
    }
  });

  it('sends --key, or else KIWI_API_KEY, as a Bearer token, as kiwi chat does (issue 22: stats could not be used once keys existed)', async () => {
    const seen: (string | undefined)[] = [];
    const port = await serve((req, res) => {
      seen.push(req.headers.authorization);
      if (req.headers.authorization !== 'Bearer kiwi_good') {
        res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'a client key is required', type: 'authentication_error' } }));
        return;
      }
      res.setHeader('content-type', 'application/json');
      res.end(METRICS);
    });
    const url = `http://127.0.0.1:${port}`;
    const viaEnv = await kiwi(['stats', '--url', url, '--json'], { KIWI_API_KEY: 'kiwi_good' });
    expect(viaEnv.err).toBe('');
    expect(JSON.parse(viaEnv.out)).toEqual(JSON.parse(METRICS));
    const viaFlag = await kiwi(['stats', '--url', url, '--key', 'kiwi_good'], { KIWI_API_KEY: 'kiwi_other' });
    expect(viaFlag.code).toBe(0);
    expect(seen).toEqual(['Bearer kiwi_good', 'Bearer kiwi_good']);

    const none = await kiwi(['stats', '--url', url]);
    expect(none.code).toBe(1);
    expect(none.err).toBe(`kiwi stats: UPSTREAM_HTTP: ${url}/metrics answered HTTP 401: a client key is required; the gateway has client keys: pass one with --key or KIWI_API_KEY`);
    const wrong = await kiwi(['stats', '--url', url], { KIWI_API_KEY: 'kiwi_bad' });
    expect(wrong.err).toMatch(/answered HTTP 401: a client key is required; kiwi stats sends --key \(or KIWI_API_KEY\) as the client key; check it$/);
    const odd = await kiwi(['stats', '--url', url, '--key', 'two words']);
    expect(odd.code).toBe(2);
    expect(odd.err).toMatch(/client key \(--key or KIWI_API_KEY\) must be one word/);
  });

  it('--help says how to pass the key; kiwi --help lists the command', async () => {
    const help = await kiwi(['stats', '--help']);
    expect(help.code).toBe(0);
    expect(help.out).toMatch(/^USAGE\n {2}kiwi stats \[--url URL\] \[--key KEY\] \[--json\]$/m);
    expect(help.out).toMatch(/^ {2}--key KEY +the client key to send \(default: KIWI_API_KEY\)/m);
    expect((await kiwi(['--help'])).out).toMatch(/^ {2}stats +prefetch counters of a running gateway/m);
  });

  it('bad flags and a bad KIWI_PORT are usage errors', async () => {
    for (const [argv, env, message] of [
      [['stats', '--url', 'not a url'], {}, /is not a URL/],
      [['stats', '--url', 'ftp://127.0.0.1/'], {}, /must be http:\/\/ or https:\/\//],
      [['stats', 'extra'], {}, /usage: kiwi stats/],
      [['stats'], { KIWI_PORT: 'eighty' }, /KIWI_PORT="eighty" is not a port/],
    ] as const) {
      const r = await kiwi([...argv], env);
      expect(r.code).toBe(2);
      expect(r.err).toMatch(message);
    }
  });
});
