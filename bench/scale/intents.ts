import { readCases, type BenchCase } from '../../src/datasets/case-file.js';

export interface ScaleIntents {
  measured: BenchCase[];
  warmup: string[];
}

/**
 * Short single-call intents, each text once (a repeated text would hit the resolver's
 * query-vector cache), taken from the measured files in order; the warm-up texts come from
 * other files and never repeat a measured one.
 */
export async function scaleIntents(files: string[], warmupFiles: string[], count: number, warmupCount: number, maxChars: number): Promise<ScaleIntents> {
  const seen = new Set<string>();
  const measured: BenchCase[] = [];
  for (const c of await readCases(files)) {
    if (measured.length >= count) break;
    if (c.calls.length !== 1 || c.intent.length > maxChars || seen.has(c.intent)) continue;
    seen.add(c.intent);
    measured.push(c);
  }
  if (measured.length === 0) throw new Error(`no single-call intents of at most ${maxChars} characters in ${files.join(', ')}`);
  const warmup: string[] = [];
  for (const c of await readCases(warmupFiles)) {
    if (warmup.length >= warmupCount) break;
    if (c.intent.length > maxChars || seen.has(c.intent)) continue;
    seen.add(c.intent);
    warmup.push(c.intent);
  }
  if (warmup.length === 0) throw new Error(`no warm-up intents in ${warmupFiles.join(', ')} that differ from the measured ones`);
  return { measured, warmup };
}
