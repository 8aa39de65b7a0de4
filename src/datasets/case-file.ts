import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';

const GoldCall = z.object({
  name: z.string().min(1),
  arguments: z.record(z.string(), z.array(z.unknown())).nullable(),
});

const CaseLine = z.looseObject({
  id: z.string().min(1),
  intent: z.string(),
  calls: z.array(GoldCall),
});

export type GoldCall = z.infer<typeof GoldCall>;
export interface BenchCase {
  id: string;
  intent: string;
  calls: GoldCall[];
  /** Extra string fields (category, …), reported on as groups. */
  groups: Record<string, string>;
  file: string;
}

/** Reads one or more cases files; a bad line stops the run with its file and line number. */
export async function readCases(files: string[]): Promise<BenchCase[]> {
  const out: BenchCase[] = [];
  for (const file of files) {
    const lines = (await readFile(file, 'utf8')).split('\n');
    lines.forEach((line, index) => {
      if (!line.trim()) return;
      const where = `${file}:${index + 1}`;
      let json: unknown;
      try {
        json = JSON.parse(line);
      } catch (error) {
        throw new Error(`${where}: not JSON (${error instanceof Error ? error.message : error})`);
      }
      const parsed = CaseLine.safeParse(json);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        throw new Error(`${where}: ${issue?.path.join('.') || 'line'}: ${issue?.message}; see shared/bench/FORMAT.md`);
      }
      const { id, intent, calls, ...rest } = parsed.data;
      const groups: Record<string, string> = {};
      for (const [k, v] of Object.entries(rest)) if (typeof v === 'string') groups[k] = v;
      out.push({ id, intent, calls, groups, file: path.basename(file) });
    });
  }
  return out;
}

/**
 * `n` cases spread evenly over the list (every k-th), so that a quick run sees the whole file
 * and not only its first, often easiest, lines; the whole list when it has no more than `n`.
 */
export function spreadSample<T>(cases: readonly T[], n: number): T[] {
  if (cases.length <= n) return [...cases];
  return Array.from({ length: n }, (_, i) => cases[Math.floor((i * cases.length) / n)] as T);
}
