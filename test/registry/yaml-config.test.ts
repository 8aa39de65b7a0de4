import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isKiwiError } from '../../src/base/errors.js';
import { loadYamlConfig } from '../../src/registry/yaml-config.js';

const dir = mkdtempSync(path.join(tmpdir(), 'kiwi-yaml-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const schema = z.strictObject({
  port: z.number().int().default(8787),
  server: z.strictObject({ host: z.string().default('127.0.0.1'), timeout_ms: z.number().default(1000) }).prefault({}),
});
const spec = { shown: 'c.yaml', schema, maxBytes: 1024, hint: 'see the comments' };

function write(text: string): string {
  const file = path.join(dir, `c-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, text);
  return file;
}

async function refused(text: string): Promise<string> {
  const error = await loadYamlConfig(write(text), spec).catch((e: unknown) => e);
  if (!isKiwiError(error, 'INVALID_INPUT')) throw new Error(`expected INVALID_INPUT, got ${String(error)}`);
  return error.message;
}

describe('loadYamlConfig', () => {
  it('applies the schema defaults, and gives nothing for a missing file', async () => {
    expect((await loadYamlConfig(write('server:\n  host: 0.0.0.0\n'), spec))?.data).toEqual({ port: 8787, server: { host: '0.0.0.0', timeout_ms: 1000 } });
    expect((await loadYamlConfig(write(''), spec))?.data).toEqual({ port: 8787, server: { host: '127.0.0.1', timeout_ms: 1000 } });
    expect(await loadYamlConfig(path.join(dir, 'absent.yaml'), spec)).toBeUndefined();
  });

  it('names file:line:col for bad YAML', async () => {
    expect(await refused('port: 1\nport: 2\n')).toMatch(/^c\.yaml:2:1: invalid YAML: Map keys must be unique/);
  });

  it('names the field of an unknown key with a did-you-mean and the fields it could be', async () => {
    expect(await refused('server:\n  hst: x\n')).toBe('c.yaml:2:3: server.hst: unknown field (did you mean "host"?); the fields here are host, timeout_ms; see the comments');
  });

  it('says what a field of the wrong type must be', async () => {
    expect(await refused('server:\n  timeout_ms: soon\n')).toBe('c.yaml:2:15: server.timeout_ms: must be a number; see the comments');
    expect(await refused('server: [a]\n')).toBe('c.yaml:1:9: server: must be a mapping (`key: value` lines); see the comments');
  });

  it('refuses a file over the cap without reading it', async () => {
    expect(await refused(`# ${'x'.repeat(2000)}\n`)).toBe('c.yaml: is 2003 bytes, larger than the 1024 allowed; it should be a few lines');
  });

  it('lets a loader report its own checks in the same format', async () => {
    const loaded = await loadYamlConfig(write('port: 80\n'), spec);
    expect(() => loaded?.fail(['port'], 'is taken')).toThrow(/^c\.yaml:1:7: port: is taken; see the comments$/);
  });
});
