import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDirective } from '../../src/registry/directive-parser.js';
import { parseKnowledge } from '../../src/registry/knowledge-parser.js';
import type { Directive, Knowledge } from '../../src/registry/types.js';
import { fuse, fuseSources } from '../../src/resolver/fuse.js';
import { itemCue } from '../../src/resolver/item-cues.js';
import { createResolver } from '../../src/resolver/resolver.js';
import type { Resolution } from '../../src/resolver/types.js';
import { openResolverRuntime, type ResolverRuntime } from '../../src/resolver/resolver-runtime.js';
import { createEmbedder } from '../../src/embed/create-embedder.js';
import { openToolIndex } from '../../src/store/tool-index.js';
import { makeTool } from '../helpers/make-tool.js';

/**
 * Directives and knowledge entries as intents' targets: the real sentence encoder (USE-lite) and
 * real LanceDB tables on disk, as `kiwi resolve` opens them. Every resolved call runs here
 * (target_precision 0, raw confidences) so that what is checked is which item and which values.
 */

const TOOLS = [
  makeTool({ id: 'read_file', description: 'Read a text file from the project', parameters: [{ name: 'path', type: 'string', required: true, format: 'path' }] }),
  makeTool({ id: 'git_status', description: 'Show which files changed in the git working tree' }),
  makeTool({
    id: 'send_slack_message',
    type: 'api',
    description: 'Send a message to a Slack channel',
    parameters: [
      { name: 'channel', type: 'string', required: true, description: 'Channel such as #ops' },
      { name: 'text', type: 'string', required: true, description: 'The message text' },
    ],
  }),
  makeTool({ id: 'get_weather_forecast', type: 'api', description: 'Get the weather forecast for a city', parameters: [{ name: 'city', type: 'string', required: true }] }),
];

const DEPLOY = `# Deploy checklist

\`\`\`xml
<directive name="deploy_checklist" version="1.0.0">
  <metadata>
    <description>Go through the release checklist before deploying a service</description>
    <category>operations</category>
    <model tier="balanced"/>
    <permissions><execute resource="tool" id="git_status"/></permissions>
  </metadata>
  <inputs>
    <input name="environment" type="string" required="true">Where to deploy: staging or production</input>
  </inputs>
  <process>
    <step name="check_tree"><description>Make sure the working tree is clean</description></step>
    <step name="announce"><description>Tell the team in the ops channel</description></step>
  </process>
</directive>
\`\`\`
`;

const RATE_LIMITS = `---
id: api-rate-limits
title: API rate limiting
entry_type: reference
category: api
tags: [rate limits, throttling, http 429]
---

Upstream APIs answer 429 when a client sends too many requests; back off exponentially and
respect the Retry-After header.
`;

function directive(text: string): Directive {
  const parsed = parseDirective(text, { file: '/virtual/.ai/directives/d.md', display: 'd.md' }, 'project');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  return parsed.value;
}

function knowledge(text: string): Knowledge {
  const parsed = parseKnowledge(text, { file: '/virtual/.ai/knowledge/k.md', display: 'k.md' }, 'project');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  return parsed.value;
}

let dir: string;
let withItems: ResolverRuntime;
let toolsOnly: ResolverRuntime;
/** With the shipped model and its default gate, as a gateway resolves. */
let gated: ResolverRuntime;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'kiwi-items-'));
  const common = { tools: TOOLS, model: null, settings: { targetPrecision: 0 } } as const;
  withItems = await openResolverRuntime({ ...common, directives: [directive(DEPLOY)], knowledge: [knowledge(RATE_LIMITS)], indexDir: path.join(dir, 'with') });
  toolsOnly = await openResolverRuntime({ ...common, directives: [], knowledge: [], indexDir: path.join(dir, 'without') });
  await withItems.sync();
  await toolsOnly.sync();
  gated = await openResolverRuntime({ tools: TOOLS, directives: [directive(DEPLOY)], knowledge: [knowledge(RATE_LIMITS)], indexDir: path.join(dir, 'gated') });
  await gated.sync();
}, 60_000);

afterAll(async () => {
  await withItems?.close();
  await toolsOnly?.close();
  await gated?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const strip = (r: Resolution) => ({ ...r, timings: undefined });

describe('directives and knowledge as intents (USE-lite, real LanceDB)', () => {
  it('indexes them in their own table, and reports them in the sync', async () => {
    expect(withItems.itemCount).toBe(2);
    expect(existsSync(path.join(dir, 'with', 'items.lance'))).toBe(true);
    const again = await withItems.sync();
    expect(again).toMatchObject({ added: 0, updated: 0, removed: 0, unchanged: 6, items: { unchanged: 2 } });
  });

  it('resolves a knowledge intent to the entry, with no arguments', async () => {
    const r = await withItems.resolver.resolve('load knowledge about API rate limiting');
    expect(r).toMatchObject({ status: 'resolved', call: { tool: 'api-rate-limits', item: 'knowledge', arguments: {} } });
    expect(r.candidates[0]).toMatchObject({ tool: 'api-rate-limits', item: 'knowledge' });
  });

  it('loads a knowledge entry past the retrieval threshold without the call gate, which still holds tools and directives', async () => {
    // Loading an entry changes nothing; a call from plain words does, and the default gate asks it back.
    expect(await gated.resolver.resolve('load knowledge about API rate limiting')).toMatchObject({ status: 'resolved', call: { tool: 'api-rate-limits', item: 'knowledge' } });
    expect(await gated.resolver.resolve('run the deploy checklist for environment "staging"')).toMatchObject({ status: 'unresolved', stop: 'gate' });
  });

  it('resolves a directive intent to the directive, its inputs filled from the intent like a tool\'s arguments', async () => {
    const r = await withItems.resolver.resolve('run the deploy checklist for environment "staging"');
    expect(r).toMatchObject({ status: 'resolved', call: { tool: 'deploy_checklist', item: 'directive', arguments: { environment: 'staging' } } });
  });

  it('leaves a directive intent without a required input unresolved, naming it', async () => {
    const r = await withItems.resolver.resolve('run the deploy checklist');
    expect(r).toMatchObject({ status: 'unresolved', missing: ['environment'], reason: expect.stringMatching(/`deploy_checklist` fits, but the intent does not give `environment`/) });
    expect(r.candidates[0]).toMatchObject({ tool: 'deploy_checklist', item: 'directive' });
  });

  it('still resolves tool intents to tools in a project with directives and knowledge', async () => {
    const message = await withItems.resolver.resolve('send a slack message "deploy done" to channel "#ops"');
    expect(message).toMatchObject({ status: 'resolved', call: { tool: 'send_slack_message', arguments: { channel: '#ops', text: 'deploy done' } } });
    expect(message.status === 'resolved' && message.call.item).toBeUndefined();
    const weather = await withItems.resolver.resolve('get the weather forecast for "Paris"');
    expect(weather).toMatchObject({ status: 'resolved', call: { tool: 'get_weather_forecast', arguments: { city: 'Paris' } } });
    expect(weather.candidates[0]?.item).toBeUndefined();
  });

  it('runs exact calls and named ids of items as written', async () => {
    expect(await withItems.resolver.resolve('api-rate-limits {}')).toMatchObject({ status: 'resolved', confidence: 1, call: { tool: 'api-rate-limits', item: 'knowledge', arguments: {} } });
    expect(await withItems.resolver.resolve('deploy_checklist {"environment": "production"}')).toMatchObject({ status: 'resolved', call: { tool: 'deploy_checklist', item: 'directive', arguments: { environment: 'production' } } });
    expect(await withItems.resolver.resolve('deploy_checklist {}')).toMatchObject({ status: 'unresolved', missing: ['environment'], candidates: [{ tool: 'deploy_checklist', item: 'directive' }] });
  });

  it('resolves a project without directives and knowledge exactly as a resolver of its tools alone, and opens no second table', async () => {
    expect(existsSync(path.join(dir, 'without', 'items.lance'))).toBe(false);
    const embedder = await createEmbedder({ kind: 'use-lite' });
    const index = await openToolIndex({ dir: path.join(dir, 'without'), embedder });
    try {
      const plain = createResolver({ tools: toolsOnly.tools, search: index, embedder, settings: { targetPrecision: 0 } });
      for (const intent of ['load knowledge about API rate limiting', 'run the deploy checklist', 'send a slack message "hi" to "#ops"', 'read README.md', 'git_status {}']) {
        expect(strip(await toolsOnly.resolver.resolve(intent))).toEqual(strip(await plain.resolve(intent)));
      }
    } finally {
      await index.close();
      await embedder.close();
    }
  }, 30_000);
});

describe('fusion over the tools and the items', () => {
  const tools = { vector: [{ id: 'a', score: 0.5 }, { id: 'b', score: 0.3 }], text: [{ id: 'b', score: 4 }, { id: 'c', score: 2 }] };

  it('is fuse itself for one source', () => {
    expect(fuseSources([tools], { textWeight: 0.4 })).toEqual(fuse(tools.vector, tools.text, { textWeight: 0.4 }));
  });

  it('divides BM25 by the best over every source, and gives a row that a short side left out 0 there, not a stand-in', () => {
    const items = { vector: [{ id: 'directive:x', score: 0.6 }, { id: 'knowledge:y', score: 0.2 }], text: [{ id: 'directive:x', score: 8 }], k: 50 };
    const fused = fuseSources([tools, items], { textWeight: 0.4 });
    const by = new Map(fused.map((c) => [c.tool, c]));
    expect(by.get('directive:x')).toMatchObject({ textScore: 1, score: (0.6 + 0.4) / 1.4 });
    expect(by.get('b')?.textScore).toBe(0.5);
    expect(by.get('knowledge:y')?.score).toBeCloseTo(0.2 / 1.4, 10);
    // The tools' side keeps its stand-in: `a` missed the text side, which was not asked for fewer.
    expect(by.get('a')?.score).toBeCloseTo((0.5 + 0.4 * (2 / 8)) / 1.4, 10);
  });
});

describe('kind words', () => {
  it('reads "knowledge", "directive", "checklist" and "run the … process" as the kind asked for, and nothing else', () => {
    expect(itemCue('load knowledge about API rate limiting')).toBe('knowledge');
    expect(itemCue('run the review changes directive')).toBe('directive');
    expect(itemCue('run the deploy checklist')).toBe('directive');
    expect(itemCue('follow the release process for v2')).toBe('directive');
    expect(itemCue('read the file README.md')).toBeUndefined();
    expect(itemCue('kill the process 1234')).toBeUndefined();
    expect(itemCue('run the knowledge directive')).toBeUndefined();
  });
});
