import { describe, expect, it } from 'vitest';
import { splitWords, toolContentHash, toolDocument } from '../../src/registry/tool-document.js';
import { textQueryTerms } from '../../src/store/text-query.js';
import { makeTool } from '../helpers/make-tool.js';

describe('splitWords', () => {
  it.each([
    ['getWaterQuality', 'get water quality'],
    ['get_water_quality', 'get water quality'],
    ['fs.read_file', 'fs read file'],
    ['HTTPServer2Go', 'http server 2 go'],
    ['s3Upload', 's 3 upload'],
    ['weather-forecast.v2', 'weather forecast v 2'],
    ['ÜberFahrt', 'über fahrt'],
    ['', ''],
  ])('%s → "%s"', (input, expected) => {
    expect(splitWords(input)).toBe(expected);
  });
});

describe('toolDocument', () => {
  const tool = makeTool({
    id: 'getWaterQuality',
    description: '  Measure the water\n quality of a river  ',
    parameters: [
      { name: 'station_id', type: 'string', required: true, description: 'monitoring station code' },
      { name: 'unitSystem', type: 'string', required: false, enum: ['metric', 'imperial', 3, { no: 'objects' }] },
    ],
    tags: ['environment', 'water'],
    examples: ['how clean is the Thames today?'],
  });

  it('holds the split name, description, parameters, enum values, tags and examples, one per line', () => {
    expect(toolDocument(tool)).toBe(
      [
        'get water quality',
        'Measure the water quality of a river',
        'station id: monitoring station code',
        'unit system (one of: metric, imperial, 3)',
        'tags: environment, water',
        'how clean is the Thames today?',
      ].join('\n'),
    );
  });

  it('leaves out what a search cannot use (source path, version, config)', () => {
    const moved = { ...tool, source: { path: '/elsewhere/x.yaml', tier: 'user' as const }, version: '9.9.9', config: { url: 'https://x' } };
    expect(toolDocument(moved)).toBe(toolDocument(tool));
    expect(toolContentHash(moved, 'm')).toBe(toolContentHash(tool, 'm'));
  });

  it('caps a runaway description', () => {
    expect(toolDocument(makeTool({ id: 'x', description: 'word '.repeat(100_000) })).length).toBe(16_000);
  });
});

describe('toolContentHash', () => {
  const tool = makeTool({ id: 'a', description: 'one' });
  it('is a sha256 that changes with the document and with the embedder id', () => {
    const base = toolContentHash(tool, 'use-lite-512');
    expect(base).toMatch(/^[0-9a-f]{64}$/);
    expect(toolContentHash(tool, 'use-lite-512')).toBe(base);
    expect(toolContentHash(tool, 'onnx-minilm')).not.toBe(base);
    expect(toolContentHash({ ...tool, description: 'two' }, 'use-lite-512')).not.toBe(base);
    expect(toolContentHash({ ...tool, tags: ['t'] }, 'use-lite-512')).not.toBe(base);
  });
});

describe('textQueryTerms', () => {
  it.each([
    ['"water quality"', 'water quality'],
    ["river's water", 'river s water'],
    ['station_id: "X-1"', 'station id x 1'],
    ['(water) AND quality OR NOT wat*', 'water quality wat'],
    ['-water +quality ~2 ^3', 'water quality 2 3'],
    ['🌊 water 🐟', 'water'],
    ['getWaterQuality', 'get water quality'],
    ['', ''],
    ['"" () * : - AND OR NOT', ''],
  ])('%s → "%s"', (input, expected) => {
    expect(textQueryTerms(input)).toBe(expected);
  });

  it('keeps at most 64 terms', () => {
    expect(textQueryTerms('word '.repeat(1_000)).split(' ')).toHaveLength(64);
  });
});
