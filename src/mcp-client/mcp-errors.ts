import { ProtocolError, SdkError, SdkErrorCode, SdkHttpError, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/client';
import { KiwiError } from '../base/errors.js';
import { isMessageTooLarge } from './capped-fetch.js';
import { describeSpec, type McpServerSpec } from './server-spec.js';

/** Why a server's connection ended: its process exited, it was closed, or a message passed the size cap. */
export type CloseReason = 'exited' | 'closed' | 'too-large';

/** What to do after a failed request: the error to throw, whether the connection is unusable, whether one retry on a fresh one is safe. */
export interface CallFailure {
  error: KiwiError;
  dropConnection: boolean;
  retryOnFreshConnection: boolean;
}

export interface CallContext {
  spec: McpServerSpec;
  /** `call to "tool"` or `listing its tools`, as it reads after "during". */
  activity: string;
  timeoutMs: number;
  maxMessageBytes: number;
  closeReason: CloseReason | null;
  stderr: string;
  signal: AbortSignal | undefined;
  /** The protocol revision the connection speaks, named in errors that may come of it. */
  protocolVersion: string;
  /** The last message from the server the SDK could not read. */
  badMessage: string | undefined;
}

/** Turns whatever the SDK threw for one request into a KiwiError that says what happened and what to do. */
export function classifyCallError(error: unknown, ctx: CallContext): CallFailure {
  const server = `MCP server "${ctx.spec.name}"`;
  const details = { server: ctx.spec.name, activity: ctx.activity, protocolVersion: ctx.protocolVersion, cause: describeCause(error) };
  const fail = (code: KiwiError['code'], message: string, dropConnection: boolean, extra: Record<string, unknown> = {}): CallFailure => ({
    error: new KiwiError(code, message, { cause: error, details: { ...details, ...extra } }),
    dropConnection,
    retryOnFreshConnection: false,
  });

  if (ctx.signal?.aborted) return fail('TOOL_CANCELLED', `${cap(ctx.activity)} on ${server} was cancelled by the caller.`, false);
  if (ctx.closeReason === 'too-large' || isMessageTooLarge(error)) {
    return fail(
      'OUTPUT_TOO_LARGE',
      `${server} sent a message larger than ${ctx.maxMessageBytes} bytes during ${ctx.activity}; the connection was closed and ` +
        `will be reopened on the next call. Ask for less (narrower arguments, paging) or raise maxMessageBytes.`,
      true,
    );
  }
  if (ctx.closeReason === 'closed') {
    return fail(
      'TOOL_CANCELLED',
      `The connection to ${server} was closed by the gateway (closeServer, close or a changed spec) during ${ctx.activity}; call again to reconnect.`,
      false,
    );
  }
  if (ctx.closeReason === 'exited' || isSdkError(error, SdkErrorCode.ConnectionClosed)) {
    const action = ctx.spec.transport === 'stdio' ? 'restarted' : 'reconnected';
    return fail('MCP_ERROR', `${server} exited during ${ctx.activity}; it will be ${action} on the next call.${stderrHint(ctx.stderr)}`, true, {
      stderrTail: ctx.stderr,
    });
  }
  if (isSdkError(error, SdkErrorCode.RequestTimeout)) {
    return fail(
      'MCP_TIMEOUT',
      `${server} did not answer ${ctx.activity} within ${ctx.timeoutMs} ms; the request was cancelled. ` +
        `Raise callTimeoutMs if the tool is slow, or check the server.${badMessageHint(ctx.badMessage)}`,
      false,
    );
  }
  if (error instanceof SdkHttpError && error.status === 404) {
    // The server forgot our session (it restarted or expired it); the request never ran, so a retry is safe.
    const failure = fail('MCP_ERROR', `${server} no longer knows this session (HTTP 404) during ${ctx.activity}; reconnect and try again.`, true);
    return { ...failure, retryOnFreshConnection: true };
  }
  if (error instanceof ProtocolError) {
    return fail('MCP_ERROR', `${server} answered ${ctx.activity} with JSON-RPC error ${error.code} (protocol ${ctx.protocolVersion}): ${error.message}`, false, {
      rpcCode: error.code,
    });
  }
  if (isSdkError(error, SdkErrorCode.InvalidResult) || error instanceof SyntaxError) {
    // The request was answered, with something that is not what MCP says it answers; the connection itself still works.
    return fail('MCP_ERROR', `${server} answered ${ctx.activity} with a result that is not valid MCP (protocol ${ctx.protocolVersion}): ${describeCause(error)}`, false);
  }
  if (ctx.spec.transport !== 'stdio') {
    return fail(
      'MCP_ERROR',
      `${server} could not be reached during ${ctx.activity} (${describeCause(error)}); the connection was dropped and will be ` +
        `reopened on the next call. Check that the server at ${describeSpec(ctx.spec)} is running.`,
      true,
    );
  }
  return fail('MCP_ERROR', `${server} failed during ${ctx.activity}: ${describeCause(error)}`, false);
}

export interface ConnectContext {
  exited: boolean;
  stderr: string;
  /** The child that was started and has been reaped, if one was. */
  pid: number | null;
  signal: AbortSignal | undefined;
  connectTimeoutMs: number;
  /** The last message from the server the SDK could not read. */
  badMessage?: string | undefined;
}

/** Turns a failed connect/handshake into a KiwiError; the connection has already been closed and its child reaped. */
export function connectError(spec: McpServerSpec, error: unknown, ctx: ConnectContext): KiwiError {
  const server = `MCP server "${spec.name}" (${describeSpec(spec)})`;
  const details = { server: spec.name, cause: describeCause(error), stderrTail: ctx.stderr, pid: ctx.pid };
  const make = (code: KiwiError['code'], message: string) => new KiwiError(code, message, { cause: error, details });

  if (ctx.signal?.aborted) return make('TOOL_CANCELLED', `Connecting to ${server} was cancelled because the server was closed (closeServer, close or a changed spec); call again to reconnect.`);
  if (isSpawnError(error)) {
    return make(
      'SPAWN_FAILED',
      `Could not start ${server}: ${describeCause(error)}. Check that the command exists (an absolute path or on PATH), ` +
        `is executable, and that cwd exists.`,
    );
  }
  if (isSdkError(error, SdkErrorCode.RequestTimeout)) {
    return make(
      'MCP_TIMEOUT',
      `${server} did not finish the MCP handshake within ${ctx.connectTimeoutMs} ms. Check that it is an MCP server ` +
        `(JSON-RPC on ${spec.transport === 'stdio' ? 'stdin/stdout' : 'this URL'}), or raise connectTimeoutMs.${badMessageHint(ctx.badMessage)}`,
    );
  }
  const unsupported = /protocol version is not supported: (.*)$/.exec(describeCause(error));
  if (unsupported) {
    return make(
      'MCP_ERROR',
      `${server} answered the MCP handshake with protocol version ${JSON.stringify(unsupported[1]?.slice(0, 40))}, which the gateway does not speak ` +
        `(it speaks ${SPOKEN_VERSIONS}). Upgrade the server or its MCP SDK.`,
    );
  }
  if (ctx.exited || isSdkError(error, SdkErrorCode.ConnectionClosed)) {
    return make(
      'MCP_ERROR',
      `${server} exited before finishing the MCP handshake.${stderrHint(ctx.stderr)} Check the command, its arguments and its environment.`,
    );
  }
  if (isMessageTooLarge(error)) return make('OUTPUT_TOO_LARGE', `${server} sent a handshake message over the size cap; raise maxMessageBytes.`);
  if (spec.transport !== 'stdio') {
    return make(
      'MCP_ERROR',
      `Could not connect to ${server}: ${describeCause(error)}. Check the URL and headers, and that the server is running.`,
    );
  }
  return make('MCP_ERROR', `Could not connect to ${server}: ${describeCause(error)}.`);
}

/** The revisions the client speaks, newest first, for errors about versions (the SDK's list holds the 2025 era and older). */
const SPOKEN_VERSIONS = ['2026-07-28', ...SUPPORTED_PROTOCOL_VERSIONS].join(', ');

function isSdkError(error: unknown, code: SdkErrorCode): boolean {
  return error instanceof SdkError && error.code === code;
}

function badMessageHint(badMessage: string | undefined): string {
  return badMessage === undefined ? '' : ` It sent ${badMessage}, which the gateway ignored; an MCP server sends nothing but MCP messages.`;
}

function isSpawnError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const syscall = (error as NodeJS.ErrnoException).syscall;
  return typeof syscall === 'string' && syscall.startsWith('spawn');
}

/** The message and its causes, one level each, e.g. `fetch failed (connect ECONNREFUSED 127.0.0.1:9)`. */
export function describeCause(error: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = error, depth = 0; e !== undefined && e !== null && depth < 3; depth++) {
    const message = e instanceof Error ? e.message : String(e);
    // The SDK 2.x often repeats its cause in its own message.
    if (!parts.some((part) => part.includes(message))) parts.push(message);
    e = e instanceof Error ? e.cause : undefined;
  }
  const [first, ...rest] = parts;
  return rest.length === 0 ? (first ?? 'unknown error') : `${first} (${rest.join('; ')})`;
}

function stderrHint(stderr: string): string {
  const last = stderr
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .at(-1);
  return last === undefined ? '' : ` Its last stderr line: ${JSON.stringify(last.slice(0, 300))}.`;
}

function cap(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
