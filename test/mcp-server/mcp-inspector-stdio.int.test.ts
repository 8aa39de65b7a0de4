import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyDemoProject } from '../helpers/demo-project.js';
import { inspect, toolNames } from '../helpers/mcp-inspector.js';
import { kiwiCli } from '../helpers/run-resources.js';

/** The official MCP Inspector CLI against `kiwi mcp` on the demo project: the real tools listed and one called by its name. */

let root: string;
beforeAll(() => {
  root = copyDemoProject('kiwi-inspector-stdio-');
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const kiwiMcp = (): string[] => [process.execPath, ...kiwiCli(), 'mcp', '--project', root];

describe('kiwi mcp with the MCP Inspector CLI', () => {
  it("lists the demo project's tools beside the meta-tools and calls one by its name", async () => {
    // Two runs of the Inspector, each with a `kiwi mcp` of its own, at once.
    const [listed, called] = await Promise.all([
      inspect(['--method', 'tools/list'], kiwiMcp()),
      inspect(['--method', 'tools/call', '--tool-name', 'word_count', '--tool-arg', 'path=README.md'], kiwiMcp()),
    ]);
    expect(toolNames(listed)).toEqual(expect.arrayContaining(['search', 'load', 'execute', 'help', 'resolve', 'word_count', 'read_file', 'git_status']));
    expect(called).toMatchObject({ isError: false, structuredContent: { status: 'ok', tool: 'word_count', data: { words: 4 } } });
  }, 120_000);
});
