import { cp, mkdtemp, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbedder } from '../../src/embed/create-embedder.js';
import type { Embedder } from '../../src/embed/embedder.js';
import { createStaticEmbedder, DEFAULT_STATIC_MODEL_DIR } from '../../src/embed/static-embedder.js';
import { readStaticModel, writeStaticModel } from '../../src/embed/static-model-file.js';
import { tokenize } from '../../src/embed/static-tokenizer.js';
import { dot, normalize } from '../../src/embed/vector-math.js';
import { failure } from '../helpers/expect-failure.js';

let root: string;
let shipped: Embedder;

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'kiwi-static-'));
  shipped = await createStaticEmbedder();
});

afterAll(async () => {
  await shipped?.close();
  await rm(root, { recursive: true, force: true });
});

/** A copy of a tiny valid model, for breaking one file at a time. */
async function tinyModel(name: string): Promise<string> {
  const dir = path.join(root, name);
  await writeStaticModel(dir, {
    id: 'tiny',
    vocab: ['send', 'mail', 'zip'],
    scales: new Float32Array([0.5, 0.5, 1]),
    rows: new Int8Array([127, 0, 0, 0, 127, 0, 0, 0, 127]),
    bias: new Float32Array([0, 0, 0.1]),
  });
  return dir;
}

describe('static word tokenizer', () => {
  it('splits camelCase, acronyms, snake_case and punctuation, lower-cases, and drops overlong words', () => {
    expect(tokenize('getWeatherForecast(city_name="Paris")')).toEqual(['get', 'weather', 'forecast', 'city', 'name', 'paris']);
    expect(tokenize('HTTPServer and mp3Player, e-mail: user@example.org')).toEqual(['http', 'server', 'and', 'mp3', 'player', 'e', 'mail', 'user', 'example', 'org']);
    expect(tokenize(`ｆｕｌｌ-width ${'x'.repeat(33)} Größe`)).toEqual(['full', 'width', 'größe']);
    expect(tokenize('  ... ')).toEqual([]);
  });
});

describe('static embedder (shipped model)', () => {
  it('loads models/static-use-256 by default: unit vectors of 256 numbers, an id with a fingerprint of the weights', async () => {
    expect(shipped.dimensions).toBe(256);
    expect(shipped.id).toMatch(/^static:static-use-256-v1:[0-9a-f]{12}$/);
    const [v] = await shipped.embed(['compress files into a zip archive']);
    expect(v).toBeInstanceOf(Float32Array);
    expect(v).toHaveLength(256);
    expect(dot(v!, v!)).toBeCloseTo(1, 5);
  });

  it('puts texts that mean the same closer than unrelated ones', async () => {
    const [mail, email, zip, archive, weather] = await shipped.embed([
      'send an email message to a friend',
      'mail client for reading and writing messages',
      'compress files into a zip archive',
      'tool to create and extract tar and zip archives',
      'show the weather forecast for a city',
    ]);
    expect(dot(mail!, email!)).toBeGreaterThan(dot(mail!, zip!));
    expect(dot(mail!, email!)).toBeGreaterThan(dot(mail!, weather!));
    expect(dot(zip!, archive!)).toBeGreaterThan(dot(zip!, email!));
    expect(dot(zip!, archive!)).toBeGreaterThan(dot(zip!, weather!));
  });

  it('is deterministic across calls and batches, and ignores unknown words', async () => {
    const [a, b] = await shipped.embed(['resize a photo', 'zip archive']);
    const [again] = await shipped.embed(['resize a photo']);
    expect(Array.from(again!)).toEqual(Array.from(a!));
    const [withJunk] = await shipped.embed(['resize a photo qqxqzvvk zzqxjw']);
    expect(Array.from(withJunk!)).toEqual(Array.from(a!));
    expect(Array.from(b!)).not.toEqual(Array.from(a!));
  });

  it('gives a text with no known word (or none at all) the model bias direction, the same every time', async () => {
    const model = await readStaticModel(DEFAULT_STATIC_MODEL_DIR);
    const bias = normalize(model.bias)!;
    const [empty, unknown, punctuation] = await shipped.embed(['', 'qqxqzvvk zzqxjw', '?!']);
    for (const v of [empty, unknown, punctuation]) Array.from(bias).forEach((x, k) => expect(v![k]).toBeCloseTo(x, 6));
  });

  it('embeds a large batch in order, yielding to the event loop, and honours the signal and close()', async () => {
    const texts = Array.from({ length: 5000 }, (_, i) => (i % 2 === 0 ? 'zip archive' : `send mail ${i}`));
    const vectors = await shipped.embed(texts);
    expect(vectors).toHaveLength(5000);
    expect(Array.from(vectors[4998]!)).toEqual(Array.from(vectors[0]!));

    const controller = new AbortController();
    const pending = shipped.embed(texts, controller.signal);
    // The first chunk runs synchronously; the abort lands at the next turn.
    controller.abort();
    await failure(pending, 'TOOL_CANCELLED');

    const own = await createEmbedder({ kind: 'static' });
    expect(own.id).toBe(shipped.id);
    await own.close();
    await failure(own.embed(['zip']), 'TOOL_CANCELLED');
  });
});

describe('static embedder (bad files and options)', () => {
  it('embeds with a tiny model exactly as its rule says: bias + mean of known rows, unit length', async () => {
    const embedder = await createStaticEmbedder({ modelDir: await tinyModel('ok') });
    const [v] = await embedder.embed(['Send MAIL, unknownword']);
    // rows: send = (63.5, 0, 0), mail = (0, 63.5, 0); mean (31.75, 31.75, 0) + bias (0, 0, 0.1).
    Array.from(normalize([31.75, 31.75, 0.1])!).forEach((x, k) => expect(v![k]).toBeCloseTo(x, 6));
    expect(embedder.id).toMatch(/^static:tiny:[0-9a-f]{12}$/);
    // Another bias means other vectors, so another id: an index built with this one gets rebuilt.
    const dir = await tinyModel('other-bias');
    await editHeader(dir, (h) => ({ ...h, bias: [0, 0, 0.2] }));
    const other = await createStaticEmbedder({ modelDir: dir });
    const same = await createStaticEmbedder({ modelDir: await tinyModel('same') });
    expect(other.id).not.toBe(embedder.id);
    expect(same.id).toBe(embedder.id);
    await Promise.all([embedder.close(), other.close(), same.close()]);
  });

  it('reads a model again once its files change in place, and reports them if they are now broken', async () => {
    const dir = await tinyModel('rebuilt');
    const before = await createStaticEmbedder({ modelDir: dir });
    await editHeader(dir, (h) => ({ ...h, bias: [0, 0, 0.3] }));
    const after = await createStaticEmbedder({ modelDir: dir });
    expect(after.id).not.toBe(before.id);
    expect((await before.embed(['send']))[0]).not.toEqual((await after.embed(['send']))[0]);
    await truncate(path.join(dir, 'weights.bin'), 10);
    await failure(createStaticEmbedder({ modelDir: dir }), 'INVALID_INPUT');
    await Promise.all([before.close(), after.close()]);
  });

  it('says a missing model folder is missing and how to rebuild or restore it', async () => {
    const absent = path.join(root, 'absent');
    const error = await failure(createStaticEmbedder({ modelDir: absent }), 'INVALID_INPUT');
    expect(error.message).toContain(`${path.join(absent, 'model.json')} does not exist`);
    expect(error.message).toContain('apt-cache dumpavail > /tmp/dumpavail.txt && npx tsx scripts/build-static-embedder.ts');
    expect(error.message).toContain('git checkout -- models/static-use-256');
  });

  it.each([
    ['a weights file of the wrong size', async (dir: string) => truncate(path.join(dir, 'weights.bin'), 10), /weights\.bin is 10 bytes; 3 words × \(4 \+ 3\) needs 21/],
    [
      'weights that do not match their hash',
      async (dir: string) => {
        const bytes = await readFile(path.join(dir, 'weights.bin'));
        bytes[15] = bytes[15]! ^ 1;
        await writeFile(path.join(dir, 'weights.bin'), bytes);
      },
      /does not match the sha256/,
    ],
    ['a vocabulary of the wrong length', async (dir: string) => writeFile(path.join(dir, 'vocab.txt'), 'send\nmail\n'), /vocab\.txt has 2 lines, model\.json says vocab_size 3/],
    ['a vocabulary line the tokenizer would split', async (dir: string) => writeFile(path.join(dir, 'vocab.txt'), 'send\nMail\nzip\n'), /line 2 \("Mail"\) is not one word of kiwi-words-v1/],
    ['a repeated word', async (dir: string) => writeFile(path.join(dir, 'vocab.txt'), 'send\nmail\nsend\n'), /line 3: "send" appears twice/],
    ['a header that is not JSON', async (dir: string) => writeFile(path.join(dir, 'model.json'), '{'), /model\.json is not JSON/],
    ['a header of another tokenizer', async (dir: string) => editHeader(dir, (h) => ({ ...h, tokenizer: 'bpe-v9' })), /built with tokenizer bpe-v9/],
    ['a header of another format version', async (dir: string) => editHeader(dir, (h) => ({ ...h, version: 2 })), /model\.json: version/],
    ['a zero bias', async (dir: string) => editHeader(dir, (h) => ({ ...h, bias: [0, 0, 0] })), /bias is all zeros/],
    ['a bias of the wrong length', async (dir: string) => editHeader(dir, (h) => ({ ...h, bias: [1] })), /bias has 1 numbers, dimensions is 3/],
    ['an oversized weights file', async (dir: string) => truncate(path.join(dir, 'weights.bin'), 65 * 1024 * 1024), /is 68157440 bytes, more than the 67108864/],
  ])('refuses %s with a message that says what is wrong and how to rebuild', async (name, damage, message) => {
    const dir = await tinyModel(name.replace(/\W+/g, '-'));
    await damage(dir);
    const error = await failure(createStaticEmbedder({ modelDir: dir }), 'INVALID_INPUT');
    expect(error.message).toMatch(message);
    expect(error.message).toContain('scripts/build-static-embedder.ts');
  });

  it('refuses bad options and configs', async () => {
    await failure(createStaticEmbedder({ maxTextChars: 0 }), 'INVALID_INPUT');
    await failure(createEmbedder({ kind: 'static', modelDir: '' }), 'INVALID_INPUT');
    const controller = new AbortController();
    controller.abort();
    await failure(createStaticEmbedder({ signal: controller.signal }), 'TOOL_CANCELLED');
  });

  it('copies of the shipped model load from any folder', async () => {
    const copy = path.join(root, 'copy');
    await cp(DEFAULT_STATIC_MODEL_DIR, copy, { recursive: true });
    const embedder = await createStaticEmbedder({ modelDir: copy });
    expect(embedder.id).toBe(shipped.id);
    await embedder.close();
  });
});

async function editHeader(dir: string, edit: (header: Record<string, unknown>) => Record<string, unknown>): Promise<void> {
  const file = path.join(dir, 'model.json');
  await writeFile(file, JSON.stringify(edit(JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>)));
}
