import { describe, expect, it } from 'vitest';
import { resolveChain } from '../../src/executor/chain.js';
import { planCall, planDynamicMcp } from '../../src/executor/plan.js';
import { makeTool, toolMap } from '../helpers/make-tool.js';

const ctx = { root: '/tmp', env: { PATH: '/usr/bin', TOKEN: 't0k' } };
const api = (config: Record<string, unknown>) => makeTool({ id: 'api', type: 'api', executor: 'http_client', config });
const plan = (tool = api({})) => planCall(resolveChain(toolMap(tool), tool.id), {}, ctx);

describe("Kiwi's config spellings", () => {
  it('auth as a string or { type: bearer, token } becomes the Authorization header; a written header wins', () => {
    for (const auth of ['Bearer ${TOKEN}', { type: 'bearer', token: '${TOKEN}' }]) {
      const p = plan(api({ url: 'http://127.0.0.1/x', auth }));
      expect(p.kind === 'http' && p.request.headers).toEqual({ Authorization: 'Bearer t0k' });
    }
    const p = plan(api({ url: 'http://127.0.0.1/x', auth: 'Bearer ${TOKEN}', headers: { authorization: 'Basic b' } }));
    expect(p.kind === 'http' && p.request.headers).toEqual({ authorization: 'Basic b' });
    expect(() => plan(api({ url: 'http://127.0.0.1/x', auth: { type: 'oauth2' } }))).toThrow(/config\.auth must be "Bearer \$\{TOKEN\}" or \{ type: bearer/);
  });

  it('auth beside headers that are not a map is refused, as the headers alone are, not turned into a header named "0"', () => {
    for (const headers of [['X-A: b'], 'X-A: b']) {
      expect(() => plan(api({ url: 'http://127.0.0.1/x', headers }))).toThrow(/config\.headers for http_client: Invalid input: expected record/);
      expect(() => plan(api({ url: 'http://127.0.0.1/x', auth: 'Bearer ${TOKEN}', headers }))).toThrow(/^tool api \(\/virtual\/\.ai\/tools\/api\.yaml\): config\.headers must be a map of header names to values/);
    }
    expect(() => plan(api({ url: 'http://127.0.0.1/x', auth: { 0: 'Bearer ${TOKEN}' } }))).toThrow(/config\.auth must be/);
    const server = makeTool({ id: 'srv', type: 'mcp_server', executor: 'http_client', config: { transport: 'sse', url: 'http://127.0.0.1/sse', auth: 'Bearer ${TOKEN}', headers: ['X-A: b'] } });
    expect(() => planDynamicMcp(server, resolveChain(toolMap(server), 'srv'), 'x', {}, ctx)).toThrow(/tool srv \(.*\): config\.headers must be a map of header names to values/);
  });

  it('url and url_template that differ are refused; timeout in seconds becomes timeout_ms', () => {
    expect(() => plan(api({ url: 'http://a/', url_template: 'http://b/' }))).toThrow(/config\.url and config\.url_template are both set and differ/);
    const p = plan(api({ url: 'http://127.0.0.1/x', timeout: 5 }));
    expect(p.kind === 'http' && p.request.headersTimeoutMs).toBe(5000);
  });

  it('a JSONPath the gateway cannot read fails when the call is planned, before any request', () => {
    expect(() => plan(api({ url: 'http://127.0.0.1/x', response_transform: '$..x' }))).toThrow(/recursive descent/);
  });

  it('command as an argv list runs as written; a string args is a shell string and refused', () => {
    const list = makeTool({ id: 'ls', config: { command: ['ls', '-l'], args: ['/tmp'] } });
    const p = planCall(resolveChain(toolMap(list), 'ls'), {}, ctx);
    expect(p.kind === 'subprocess' && p.argv).toEqual(['ls', '-l', '/tmp']);
    const str = makeTool({ id: 'ls2', config: { command: 'ls', args: '-l /tmp' } });
    expect(() => planCall(resolveChain(toolMap(str), 'ls2'), {}, ctx)).toThrow(/config\.args `-l \/tmp` is a shell string.*args: \["-l","\/tmp"\] \(an argv array\)/);
  });

  it('params_as_env sets KIWI_PARAM_<NAME> (or the given prefix) as literal text, never as a template', () => {
    const t = makeTool({ id: 'b', config: { command: 'env', params_as_env: 'MY_' }, parameters: [{ name: 'the-name', type: 'string', required: true }] });
    const p = planCall(resolveChain(toolMap(t), 'b'), { 'the-name': '${TOKEN} {x}' }, ctx);
    expect(p.kind === 'subprocess' && p.env['MY_THE_NAME']).toBe('${TOKEN} {x}');
  });

  it('an MCP server with auth gets the header; mcp_tool_name and tool that differ are refused', () => {
    const server = makeTool({ id: 'srv', type: 'mcp_server', executor: 'http_client', config: { transport: 'sse', url: 'http://127.0.0.1/sse', auth: { type: 'bearer', token: '${TOKEN}' } } });
    const p = planDynamicMcp(server, resolveChain(toolMap(server), 'srv'), 'x', {}, ctx);
    expect(p.server).toEqual({ name: 'srv', transport: 'sse', url: 'http://127.0.0.1/sse', headers: { Authorization: 'Bearer t0k' } });
    const tool = makeTool({ id: 'srv_x', type: 'mcp_tool', executor: 'srv', config: { mcp_tool_name: 'a', tool: 'b' } });
    expect(() => planCall(resolveChain(toolMap(tool, server), 'srv_x'), {}, ctx)).toThrow(/mcp_tool_name "a" and config\.tool "b" differ/);
  });
});
