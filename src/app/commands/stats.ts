import { z } from 'zod';
import { KiwiError, describeError, isKiwiError } from '../../base/errors.js';
import { createHttpClient } from '../../primitives/http-client.js';
import { clientKey, defaultGatewayBase, gatewayUrl } from '../../cli/gateway-address.js';
import { UsageError, type CliContext } from '../../cli/io.js';
import { parseFlags } from '../../cli/parse-flags.js';
import { STATS_HELP } from './stats-help.js';

const USAGE = STATS_HELP.usage;
const TIMEOUT_MS = 5000;
const MAX_BODY_BYTES = 1024 * 1024;
const MAX_EXTRA_LINES = 100;

/** The prefetch counters, loosely: another version of the gateway may add or drop a few. */
const metricsSchema = z.looseObject({ prefetch: z.record(z.string(), z.unknown()) });

/** Rows of the prefetch block, in the order people read them. */
const PREFETCH_ROWS: [key: string, label: string, format?: (n: number) => string][] = [
  ['snapshots', 'snapshots'],
  ['predictions', 'predictions'],
  ['prefetches', 'prefetches'],
  ['hits', 'hits'],
  ['misses', 'misses'],
  ['wasted', 'wasted'],
  ['speculativeStarted', 'speculative started'],
  ['speculativeRefused', 'speculative refused'],
  ['speculativeUsed', 'speculative used'],
  ['speculativeDiscarded', 'speculative discarded'],
  ['savedMs', 'time saved', ms],
  ['predictorMs', 'predictor time', ms],
];

/** `kiwi stats`: the prefetch counters of a running gateway, from its `GET /metrics`. */
export async function statsCommand(ctx: CliContext): Promise<number> {
  const { values, positionals } = parseFlags(ctx.argv, STATS_HELP);
  if (positionals.length > 0) throw new UsageError(`usage: ${USAGE}`);
  const url = metricsUrl(values.url ?? defaultGatewayBase(ctx.env));
  const key = clientKey(values.key ?? ctx.env['KIWI_API_KEY']);
  const body = await fetchMetrics(url, key, ctx.signal);
  if (values.json) {
    ctx.io.out(JSON.stringify(body));
    return 0;
  }
  ctx.io.out(`gateway ${url}`);
  const prefetch = body.prefetch;
  const num = (key: string): number | undefined => (typeof prefetch[key] === 'number' ? prefetch[key] : undefined);
  const rows: [string, string][] = [];
  for (const [key, label, format] of PREFETCH_ROWS) {
    const n = num(key);
    if (n !== undefined) rows.push([label, (format ?? count)(n)]);
    if (key === 'misses') rows.push(['hit rate', hitRate(num('hits'), num('misses'))]);
  }
  const known = new Set(PREFETCH_ROWS.map(([key]) => key));
  const extra = numbersIn(Object.fromEntries(Object.entries(prefetch).filter(([key]) => !known.has(key))), '');
  print(ctx, 'prefetch', [...rows, ...extra.map(([k, n]): [string, string] => [k, count(n)])]);
  const { prefetch: _, ...rest } = body;
  const others = numbersIn(rest, '');
  // A count of seconds is shown with its own unit (`uptime 2.1 min`), so the `_s` suffix goes.
  if (others.length > 0) print(ctx, 'gateway', others.map(([k, n]) => (k.endsWith('_s') ? [k.slice(0, -2), seconds(n)] : [k, count(n)])));
  return 0;
}

/** `<base>/metrics`; a URL that already ends in /metrics is taken as it is. */
function metricsUrl(base: string): string {
  const url = gatewayUrl(base, '; pass a client key with --key or KIWI_API_KEY');
  if (!url.pathname.endsWith('/metrics')) url.pathname = `${url.pathname.replace(/\/+$/, '')}/metrics`;
  return url.toString();
}

async function fetchMetrics(url: string, key: string | undefined, signal: AbortSignal | undefined): Promise<z.infer<typeof metricsSchema>> {
  const http = createHttpClient();
  let status: number;
  let text: string;
  try {
    const response = await http.request({
      method: 'GET',
      url,
      headers: { accept: 'application/json', ...(key === undefined ? {} : { authorization: `Bearer ${key}` }) },
      connectTimeoutMs: TIMEOUT_MS,
      headersTimeoutMs: TIMEOUT_MS,
      bodyTimeoutMs: TIMEOUT_MS,
      maxResponseBytes: MAX_BODY_BYTES,
      maxRedirects: 0,
      ...(signal ? { signal } : {}),
    });
    status = response.status;
    text = response.body;
  } catch (error) {
    throw unreachable(error, url);
  } finally {
    await http.close();
  }
  if (status === 404) throw new KiwiError('UPSTREAM_HTTP', `${url} answered 404: the server there is not a Kiwi gateway with /metrics; check --url, or update the gateway`);
  if (status === 401 || status === 403) {
    const hint = key === undefined ? 'the gateway has client keys: pass one with --key or KIWI_API_KEY' : 'kiwi stats sends --key (or KIWI_API_KEY) as the client key; check it';
    throw new KiwiError('UPSTREAM_HTTP', `${url} answered HTTP ${status}: ${oneLine(errorMessage(text) ?? text)}; ${hint}`);
  }
  if (status !== 200) throw new KiwiError('UPSTREAM_HTTP', `${url} answered HTTP ${status}: ${oneLine(text)}; check the gateway's log`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new KiwiError('UPSTREAM_HTTP', `${url} did not answer JSON (${oneLine(text)}); check that --url points at a Kiwi gateway`);
  }
  const parsed = metricsSchema.safeParse(json);
  if (!parsed.success) throw new KiwiError('UPSTREAM_HTTP', `${url} answered JSON without a "prefetch" object; check that --url points at a Kiwi gateway`);
  return parsed.data;
}

/** The gateway's own message in an error body (`{"error": {"message"}}`), if it is one. */
function errorMessage(text: string): string | undefined {
  try {
    const message = (JSON.parse(text) as { error?: { message?: unknown } } | null)?.error?.message;
    return typeof message === 'string' ? message : undefined;
  } catch {
    return undefined;
  }
}

/** The HTTP client's failure, said in terms of a gateway that is not there or not healthy. */
function unreachable(error: unknown, url: string): KiwiError {
  if (isKiwiError(error, 'OUTPUT_TOO_LARGE')) return new KiwiError('PAYLOAD_TOO_LARGE', `${url} answered over ${MAX_BODY_BYTES} bytes, more than metrics ever are; check --url`);
  if (isKiwiError(error, 'TOOL_CANCELLED')) return new KiwiError('TOOL_CANCELLED', `fetching ${url} was cancelled`);
  if (isKiwiError(error, 'HTTP_TIMEOUT')) return new KiwiError('HTTP_TIMEOUT', `the gateway at ${url} did not answer within ${TIMEOUT_MS / 1000} s; check that \`kiwi serve\` is healthy there`);
  const cause = (error as { cause?: { code?: unknown } } | null)?.cause;
  const why = typeof cause?.code === 'string' ? cause.code : describeError(error);
  return new KiwiError('UPSTREAM_HTTP', `no Kiwi gateway answers at ${url} (${why}); start one with \`kiwi serve\`, or pass --url (or set KIWI_PORT) to reach the one that runs`, { cause: error });
}

/** Numbers at the top level and one level down (`requests.total`), capped in count. */
function numbersIn(value: Record<string, unknown>, prefix: string): [string, number][] {
  const out: [string, number][] = [];
  for (const [key, v] of Object.entries(value)) {
    if (out.length >= MAX_EXTRA_LINES) break;
    const name = clean(prefix + key);
    if (typeof v === 'number' && Number.isFinite(v)) out.push([name, v]);
    else if (prefix === '' && v !== null && typeof v === 'object' && !Array.isArray(v)) out.push(...numbersIn(v as Record<string, unknown>, `${name}.`));
  }
  return out.slice(0, MAX_EXTRA_LINES);
}

function print(ctx: CliContext, title: string, rows: [string, string][]): void {
  ctx.io.out(title);
  const width = Math.max(...rows.map(([label]) => label.length), 0);
  for (const [label, value] of rows) ctx.io.out(`  ${label.padEnd(width)}  ${value}`);
}

function hitRate(hits: number | undefined, misses: number | undefined): string {
  if (hits === undefined || misses === undefined || hits + misses === 0) return 'n/a (no intents yet)';
  return `${((100 * hits) / (hits + misses)).toFixed(1)}% (hits / (hits + misses))`;
}

function count(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(2);
}

function ms(n: number): string {
  return n < 1000 ? `${Math.round(n)} ms` : `${(n / 1000).toFixed(1)} s`;
}

function seconds(n: number): string {
  return n < 120 ? `${Math.round(n)} s` : n < 7200 ? `${(n / 60).toFixed(1)} min` : `${(n / 3600).toFixed(1)} h`;
}

function oneLine(text: string): string {
  return clean(text.replace(/\s+/g, ' ').trim()).slice(0, 200) || '(empty body)';
}

/** What the server sends is printed to a terminal: escape control and bidi characters. */
function clean(text: string): string {
  const safe = text.replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return safe.length <= 80 ? safe : `${safe.slice(0, 79)}…`;
}
