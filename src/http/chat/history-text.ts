/**
 * How the tool calls and results in a client's history read to the upstream. The upstream
 * never saw native tool calls (the agent writes intents), so a history that holds them, from a
 * client in resolve-only mode, goes up as plain text the model can follow.
 */

/** How a tool call the client's history holds reads to an upstream that never saw native tool calls. */
export function calledText(name: string, args: string): string {
  return `(called ${name} ${args})`;
}

/** How a tool result reads: named after its call when the history says which call it answers. */
export function resultText(name: string | undefined, text: string, isError = false): string {
  if (name === undefined) return isError ? `(the tool call failed)\n${text}` : text;
  return `(${isError ? `${name} failed` : `result of ${name}`})\n${text}`;
}
