/**
 * The app's `onError`: a failure that is not a KiwiError is a bug, and the client is told only
 * its request id; this puts the id, the route and the stack in the server's log, where that id
 * leads. The stack is cut: a stack overflow's runs to thousands of frames.
 */

const MAX_STACK_LINES = 30;

export type InternalErrorInfo = { requestId: string; route: string };

export function logInternalError(log: (line: string) => void): (error: unknown, info: InternalErrorInfo) => void {
  return (error, { requestId, route }) => {
    const stack = error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : `thrown value: ${String(error).slice(0, 500)}`;
    const lines = stack.split('\n');
    const shown = lines.length > MAX_STACK_LINES ? [...lines.slice(0, MAX_STACK_LINES), `    … ${lines.length - MAX_STACK_LINES} more frames`] : lines;
    log(`internal error on ${route} (request ${requestId}):\n${shown.join('\n')}`);
  };
}
