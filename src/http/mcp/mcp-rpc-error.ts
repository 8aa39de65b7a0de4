/** A JSON-RPC error as the whole HTTP answer, for what /mcp refuses before the SDK sees a request. */
export function rpcError(status: number, message: string, headers: Record<string, string> = {}, code = -32000): Response {
  return new Response(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }), {
    status,
    headers: { 'Content-Type': 'application/json', ...headers },
  });
}
