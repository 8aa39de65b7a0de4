import { describeError, isKiwiError, KiwiError } from '../errors.js';
import { createHttpClient } from '../primitives/http-client.js';
import { gatewayUrl } from './gateway-address.js';

/**
 * The kernel's v0 API of a running gateway, for the CLI (`kiwi executions`, `kiwi approvals`):
 * JSON in and out, the client key as a bearer token, short timeouts, and the kernel's
 * `{"error", "code"}` answers raised with their message.
 */

export interface KernelClient {
  get(path: string): Promise<unknown>;
  post(path: string, body?: unknown): Promise<unknown>;
  close(): Promise<void>;
}

const TIMEOUT_MS = 10_000;
const MAX_BODY_BYTES = 16 * 1024 * 1024;

export function createKernelClient(base: string, key: string | undefined, signal?: AbortSignal): KernelClient {
  const root = gatewayUrl(base, '; pass a client key with --key or KIWI_API_KEY');
  const http = createHttpClient();
  async function call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> {
    const url = new URL(path, root).toString();
    let response;
    try {
      response = await http.request({
        method,
        url,
        headers: { accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(key === undefined ? {} : { authorization: `Bearer ${key}` }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        connectTimeoutMs: TIMEOUT_MS,
        headersTimeoutMs: TIMEOUT_MS,
        bodyTimeoutMs: TIMEOUT_MS,
        maxResponseBytes: MAX_BODY_BYTES,
        maxRedirects: 0,
        ...(signal ? { signal } : {}),
      });
    } catch (error) {
      if (isKiwiError(error, 'TOOL_CANCELLED')) throw error;
      const cause = (error as { cause?: { code?: unknown } } | null)?.cause;
      const why = typeof cause?.code === 'string' ? cause.code : describeError(error);
      throw new KiwiError('UPSTREAM_HTTP', `no Kiwi gateway answers at ${root.origin} (${why}); start one with \`kiwi serve\`, or pass --url (or set KIWI_PORT) to reach the one that runs`, { cause: error });
    }
    let json: unknown;
    try {
      json = JSON.parse(response.body);
    } catch {
      throw new KiwiError('UPSTREAM_HTTP', `${url} answered HTTP ${response.status} without JSON; check that --url points at a Kiwi gateway`);
    }
    if (response.status >= 200 && response.status < 300) return json;
    const error = json as { error?: unknown; code?: unknown };
    const message = typeof error.error === 'string' ? error.error : `HTTP ${response.status}`;
    const hint = response.status === 401 ? '; pass a client key with --key or KIWI_API_KEY' : '';
    throw new KiwiError(response.status === 404 ? 'NOT_FOUND' : response.status === 409 ? 'CONFLICT' : response.status === 401 ? 'UNAUTHORIZED' : 'INVALID_INPUT', `${message}${hint}`);
  }
  return {
    get: (path) => call('GET', path),
    post: (path, body) => call('POST', path, body ?? {}),
    close: () => http.close(),
  };
}
