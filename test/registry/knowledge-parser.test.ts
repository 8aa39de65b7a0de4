import { describe, expect, it } from 'vitest';
import { parseKnowledge } from '../../src/registry/knowledge-parser.js';
import { signText } from '../../src/registry/signature.js';
import type { Knowledge, RegistryIssue } from '../../src/registry/types.js';

const LABEL = { file: '/p/.ai/knowledge/k.md', display: '.ai/knowledge/k.md' };

function parse(text: string): Knowledge {
  const result = parseKnowledge(text, LABEL, 'user');
  if (!result.ok) throw new Error(`expected a valid entry, got:\n${result.issues.map((i) => i.message).join('\n')}`);
  return result.value;
}

function only(text: string): RegistryIssue {
  const result = parseKnowledge(text, LABEL, 'user');
  if (result.ok) throw new Error('expected the entry to be rejected');
  expect(result.issues.map((i) => i.message)).toHaveLength(1);
  const issue = result.issues[0] as RegistryIssue;
  expect(issue.kind).toBe('knowledge');
  expect(issue.message.startsWith('.ai/knowledge/k.md')).toBe(true);
  return issue;
}

describe('knowledge entries', () => {
  it('reads the front matter and the body', () => {
    const entry = parse(`---
id: api-patterns
title: API patterns
entry_type: pattern
version: "1.2.0"
category: http
tags: [api, http]
source_url: https://example.com/notes
---

# Retries

Retry idempotent requests only.
`);
    expect(entry).toEqual({
      id: 'api-patterns',
      title: 'API patterns',
      entryType: 'pattern',
      version: '1.2.0',
      category: 'http',
      tags: ['api', 'http'],
      body: '# Retries\n\nRetry idempotent requests only.',
      signature: null,
      source: { path: LABEL.file, tier: 'user' },
    });
  });

  it('accepts zettel_id, the Kiwi MCP spelling, and numbers written unquoted', () => {
    const entry = parse('---\nzettel_id: 20260124-api\ntitle: T\nentry_type: learning\nversion: 1.0\n---\nbody\n');
    expect(entry.id).toBe('20260124-api');
    expect(entry.version).toBe('1.0');
    expect(parse('---\nzettel_id: 20260124\ntitle: T\nentry_type: learning\n---\n').id).toBe('20260124');
  });

  it('defaults version to 1.0.0 and tags to none', () => {
    const entry = parse('---\nid: a\ntitle: T\nentry_type: learning\n---\n');
    expect(entry.version).toBe('1.0.0');
    expect(entry.tags).toEqual([]);
    expect(entry.category).toBeUndefined();
  });

  it('verifies a signature line before the front matter', () => {
    const signed = signText('knowledge', '---\nid: a\ntitle: T\nentry_type: learning\n---\nBody\n', new Date('2026-01-01T00:00:00Z'));
    expect(parse(signed).signature?.timestamp).toBe('2026-01-01T00:00:00Z');
    expect(only(signed.replace('Body', 'Bodies')).message).toContain('signature does not match the content; run `kiwi sign <file>`');
  });

  it('rejects a file without front matter', () => {
    expect(only('# Just notes\n').message).toContain('no front matter found; start the entry with "---"');
  });

  it('reports malformed front matter at the file line', () => {
    const issue = only('---\nid: a\ntitle: [unclosed\nentry_type: learning\n---\nbody\n');
    expect(issue.message).toMatch(/^\.ai\/knowledge\/k\.md:\d+:\d+: invalid YAML: /);
    expect(issue.line).toBeGreaterThanOrEqual(3);
  });

  it('reports duplicate keys with the line', () => {
    expect(only('---\nid: a\nid: b\ntitle: T\nentry_type: learning\n---\n').message).toMatch(
      /^\.ai\/knowledge\/k\.md:3:1: invalid YAML: Map keys must be unique/,
    );
  });

  it('rejects a missing id, title or entry_type', () => {
    expect(only('---\ntitle: T\nentry_type: learning\n---\n').message).toContain("id: is missing; write an id like api-patterns");
    expect(only('---\nid: a\nentry_type: learning\n---\n').message).toContain('title: is missing; write a title');
    expect(only('---\nid: a\ntitle: T\n---\n').message).toContain('entry_type: is missing; write the kind of entry');
  });

  it('rejects tags that are not a list, and ids with look-alikes', () => {
    expect(only('---\nid: a\ntitle: T\nentry_type: learning\ntags: api\n---\n').message).toContain('tags: expected a list of strings');
    expect(only('---\nid: \u0430pi\ntitle: T\nentry_type: learning\n---\n').message).toContain('U+0430 CYRILLIC SMALL LETTER A');
  });

  it('rejects id and zettel_id that disagree', () => {
    expect(only('---\nid: a\nzettel_id: b\ntitle: T\nentry_type: learning\n---\n').message).toContain('keep only id');
  });
});
