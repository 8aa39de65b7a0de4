import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseKnowledge } from '../../src/registry/knowledge-parser.js';
import type { Knowledge } from '../../src/registry/types.js';
import { openResolverRuntime, type IndexProgress } from '../../src/resolver/resolver-runtime.js';
import { makeTool } from '../helpers/make-tool.js';

const TOOLS = [makeTool({ id: 'read_file', description: 'Read a text file from the project' }), makeTool({ id: 'git_status', description: 'Show which files changed in git' })];

function knowledge(): Knowledge {
  const parsed = parseKnowledge('---\nid: rate-limits\ntitle: API rate limiting\nentry_type: reference\n---\n\nBack off when an API answers 429.\n', { file: '/virtual/.ai/knowledge/k.md', display: 'k.md' }, 'project');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  return parsed.value;
}

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the resolver runtime tells what it embeds', () => {
  it('table by table on a first sync, then only that it is done', async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'kiwi-runtime-progress-'));
    const events: string[] = [];
    const progress: IndexProgress = {
      start: (table, total, state) => void events.push(`start ${table} ${total} ${state}`),
      embedded: (table, done, total) => void events.push(`embedded ${table} ${done}/${total}`),
      end: (report) => void events.push(`end ${report.added} added`),
    };
    const runtime = await openResolverRuntime({ tools: TOOLS, knowledge: [knowledge()], indexDir: dir, embedder: { kind: 'static' }, model: null });
    try {
      await runtime.sync({ progress });
      expect(events.splice(0)).toEqual(['start tools 2 new', 'embedded tools 2/2', 'start items 1 new', 'embedded items 1/1', 'end 3 added']);
      await runtime.sync({ progress });
      expect(events).toEqual(['end 0 added']);
    } finally {
      await runtime.close();
    }
  });
});
