import { describe, expect, it } from 'vitest';
import { validateArgs } from '../../src/executor/validate-args.js';
import { argumentsObject } from '../../src/llm/client-tools.js';
import { toCallResult } from '../../src/mcp-client/call-result.js';
import { makeTool } from '../helpers/make-tool.js';

/**
 * Values from outside nested 200,000 levels deep (issue 39): JSON.parse takes them, but the
 * recursive readers after it — JSON.stringify, the audit's preview — overflow the stack. Each
 * edge refuses them as what they are (arguments that fail their checks, a server's bad answer).
 */
const DEEP = '['.repeat(200_000) + ']'.repeat(200_000);

describe('values nested past MAX_JSON_DEPTH at the edges', () => {
  it('validateArgs refuses them as invalid arguments, not a stack overflow', () => {
    const tool = makeTool({ id: 'echo', type: 'api', parameters: [{ name: 'value', type: 'any', required: true }] });
    expect(() => validateArgs(tool, { value: JSON.parse(DEEP) })).toThrow(/arguments nest more than 128 levels/);
  });

  it("a client tool call's arguments that deep travel as raw text for the client to see", () => {
    const text = `{"a":${DEEP}}`;
    expect(argumentsObject(text)).toEqual({ _raw_arguments: text });
    expect(() => JSON.stringify(argumentsObject(text))).not.toThrow();
  });

  it("an MCP server's result that deep is refused as the server's error", () => {
    const raw = { content: [{ type: 'text', text: 'ok' }], structuredContent: { a: JSON.parse(DEEP) } };
    expect(() => toCallResult(raw, { server: 's', tool: 't', maxResultBytes: 1024 })).toThrow(/nested more than 128 levels/);
  });
});
