import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { importCatalog } from '../../src/datasets/catalog-file.js';
import { validateArgs } from '../../src/executor/validate-args.js';
import { fillArguments } from '../../src/resolver/fill-args.js';

/** Catalog lines as real catalogs, MCP servers and OpenAPI specs publish them (issue 26): imported, not skipped. */

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function catalog(lines: unknown[]): string {
  dir = mkdtempSync(path.join(tmpdir(), 'kiwi-catalog-'));
  const file = path.join(dir, 'catalog.jsonl');
  writeFileSync(file, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
  return file;
}

describe('importing a catalog', () => {
  it('takes loose types, a default outside its enum, names in any script and nested objects, where it used to skip the tool', async () => {
    const file = catalog([
      {
        name: 'book_room',
        description: 'Book a meeting room',
        parameters: {
          type: 'object',
          properties: {
            room: { type: 'String', description: 'Room name' },
            when: { type: 'any', description: 'Start time' },
            size: { type: 'string', enum: ['small', 'large'], default: 'medium' },
            größe: { type: 'Integer' },
            organiser: { type: 'object', properties: { name: { type: 'string' }, email: { type: 'string' } }, required: ['email'] },
            attendees: { type: 'array', items: { type: 'object', properties: { email: { type: 'string' } } } },
            note: { anyOf: [{ type: 'string' }, { type: 'number' }] },
          },
          required: ['room', 'when'],
        },
      },
    ]);
    const imported = await importCatalog(file);
    expect(imported.skipped).toEqual([]);
    const tool = imported.tools[0];
    expect(tool?.parameters.map((p) => [p.name, p.type])).toEqual([
      ['room', 'string'],
      ['when', 'any'],
      ['size', 'string'],
      ['größe', 'integer'],
      ['organiser', 'object'],
      ['attendees', 'array'],
      ['note', 'any'],
    ]);
    if (tool === undefined) return;
    // An `any` value is read from the text as text, and any JSON value passes the call's check.
    const filled = fillArguments('book room "Orchid" when "tomorrow 10:00"', tool);
    expect(filled.arguments).toMatchObject({ room: 'Orchid', when: 'tomorrow 10:00' });
    // The default its enum does not list is kept in the schema, and never sent.
    expect(filled.arguments['size']).toBeUndefined();
    expect(validateArgs(tool, { room: 'Orchid', when: { hour: 10 }, note: 3 })).toMatchObject({ when: { hour: 10 }, note: 3 });
    expect(() => validateArgs(tool, { room: 'Orchid', when: 'now', size: 'medium' })).toThrow(/must be one of "small", "large"/);
  });
});
