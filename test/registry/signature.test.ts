import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isKiwiError } from '../../src/base/errors.js';
import {
  computeDirectiveHash,
  computeKnowledgeHash,
  computeToolHash,
  signText,
  verifySignature,
} from '../../src/registry/signature.js';

const FIXTURE = path.resolve(import.meta.dirname, '../fixtures/registry/agent-directive.signed.md');
const SHARED_VECTOR = path.resolve(process.cwd(), '../shared/compat/kiwi-mcp/agent-directive.signed.md');
const VECTOR_HASH = '96440106d21b93926bd00feca333b138871a2ec959f2fe5a444d86bf0e5c58e0';
const NOW = new Date('2026-02-03T04:05:06.789Z');

const vector = readFileSync(FIXTURE, 'utf8');

describe('Kiwi MCP directive test vector', () => {
  it('verifies: the stored hash equals the recomputed one', () => {
    expect(computeDirectiveHash(vector)).toBe(VECTOR_HASH);
    expect(verifySignature('directive', vector)).toEqual({ status: 'valid', expected: VECTOR_HASH, actual: VECTOR_HASH });
  });

  it.skipIf(!existsSync(SHARED_VECTOR))('the fixture is a byte-for-byte copy of the shared vector', () => {
    expect(readFileSync(SHARED_VECTOR, 'utf8')).toBe(vector);
    expect(verifySignature('directive', readFileSync(SHARED_VECTOR, 'utf8')).status).toBe('valid');
  });

  it('does not verify after a one-byte change inside the <directive> block', () => {
    const changed = vector.replace('<category>core</category>', '<category>corE</category>');
    expect(changed).not.toBe(vector);
    const check = verifySignature('directive', changed);
    expect(check.status).toBe('invalid');
    expect(check.expected).toBe(VECTOR_HASH);
    expect(check.actual).not.toBe(VECTOR_HASH);
  });

  it('still verifies after a change to the Markdown outside the block', () => {
    const changed = vector.replace('# Agent System Prompt', '# Agent system prompt');
    expect(verifySignature('directive', changed).status).toBe('valid');
  });

  it('hashes CRLF files like LF files, as Kiwi MCP read them in text mode', () => {
    expect(verifySignature('directive', vector.replace(/\n/g, '\r\n')).status).toBe('valid');
  });
});

const KNOWLEDGE = `---
id: api-patterns
title: API patterns
entry_type: pattern
version: "1.2.0"
category: http
tags: [api, http]
---

Retry idempotent requests only.
`;

const TOOL = `#!/usr/bin/env kiwi
tool_id: echo
tool_type: script
executor: python_runtime
`;

const DIRECTIVE = `# Title

<directive name="demo" version="1.0.0">
  <metadata><description>Demo</description></metadata>
</directive>
`;

describe('signText then verifySignature', () => {
  it('roundtrips a directive, with the line first', () => {
    const signed = signText('directive', DIRECTIVE, NOW);
    expect(signed.split('\n')[0]).toMatch(/^<!-- kiwi-mcp:validated:2026-02-03T04:05:06Z:[a-f0-9]{64} -->$/);
    expect(signed.endsWith(DIRECTIVE)).toBe(true);
    expect(verifySignature('directive', signed).status).toBe('valid');
  });

  it('roundtrips a knowledge entry', () => {
    const signed = signText('knowledge', KNOWLEDGE, NOW);
    expect(signed.startsWith('<!-- kiwi-mcp:validated:2026-02-03T04:05:06Z:')).toBe(true);
    expect(verifySignature('knowledge', signed).status).toBe('valid');
    expect(verifySignature('knowledge', signed.replace('idempotent', 'all')).status).toBe('invalid');
    expect(verifySignature('knowledge', signed.replace('tags: [api, http]', 'tags: [api]')).status).toBe('invalid');
  });

  it('roundtrips a YAML tool, with the comment after the shebang', () => {
    const signed = signText('tool', TOOL, NOW);
    const lines = signed.split('\n');
    expect(lines[0]).toBe('#!/usr/bin/env kiwi');
    expect(lines[1]).toMatch(/^# kiwi-mcp:validated:2026-02-03T04:05:06Z:[a-f0-9]{64}$/);
    expect(verifySignature('tool', signed).status).toBe('valid');
    expect(verifySignature('tool', signed.replace('python_runtime', 'bash_runtime')).status).toBe('invalid');
    // The hash covers the file without its signature line.
    expect(computeToolHash(signed)).toBe(computeToolHash(TOOL));
  });

  it('replaces an old signature instead of stacking a second one', () => {
    const once = signText('directive', DIRECTIVE, NOW);
    const twice = signText('directive', once, new Date('2027-01-01T00:00:00Z'));
    expect(twice.match(/kiwi-mcp:validated/g)).toHaveLength(1);
    expect(twice).toContain('2027-01-01T00:00:00Z');
    expect(verifySignature('directive', twice).status).toBe('valid');
    const tool = signText('tool', signText('tool', 'tool_id: a\n', NOW), NOW);
    expect(tool.match(/kiwi-mcp:validated/g)).toHaveLength(1);
  });

  it('re-signing the test vector reproduces its hash', () => {
    const resigned = signText('directive', vector, new Date('2026-01-24T05:44:46Z'));
    expect(resigned).toBe(vector);
  });

  it('keeps CRLF line ends', () => {
    const signed = signText('knowledge', KNOWLEDGE.replace(/\n/g, '\r\n'), NOW);
    expect(signed.split('\r\n')[0]).toMatch(/^<!-- kiwi-mcp:validated:/);
    expect(verifySignature('knowledge', signed).status).toBe('valid');
  });
});

describe('unsigned and unhashable files', () => {
  it('reports unsigned files as unsigned', () => {
    expect(verifySignature('directive', DIRECTIVE)).toEqual({ status: 'unsigned' });
    expect(verifySignature('knowledge', KNOWLEDGE)).toEqual({ status: 'unsigned' });
    expect(verifySignature('tool', TOOL)).toEqual({ status: 'unsigned' });
  });

  it('throws a clear KiwiError when a directive has no block to hash', () => {
    expect(() => computeDirectiveHash('# just prose')).toThrow(/no <directive name="\.\.\." version="\.\.\.">/);
    let caught: unknown;
    try {
      signText('directive', '# just prose', NOW);
    } catch (error) {
      caught = error;
    }
    expect(isKiwiError(caught, 'INVALID_DIRECTIVE')).toBe(true);
  });

  it('throws a clear KiwiError when knowledge has no front matter or no id', () => {
    expect(() => computeKnowledgeHash('no front matter')).toThrow(/no YAML front matter/);
    expect(() => computeKnowledgeHash('---\ntitle: x\n---\nbody')).toThrow(/has no id/);
  });

  it('reports a signed directive whose block was removed as invalid, with the reason', () => {
    const signed = signText('directive', DIRECTIVE, NOW);
    const broken = signed.replace(/<directive[\s\S]*<\/directive>/, 'gone');
    const check = verifySignature('directive', broken);
    expect(check.status).toBe('invalid');
    expect(check.reason).toMatch(/no <directive/);
  });
});
