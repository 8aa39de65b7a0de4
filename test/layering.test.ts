import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The layers of DESIGN §8, from the bottom. A folder of src/ belongs to one layer, and every file
 * lives in a folder: what no layer above owns goes into base/. An import may point at its own layer or one below, never above, and no set of
 * files or folders may import each other in a circle. Outside systems are reached from backends
 * and edges only. A new folder fails here until it is given a layer.
 */
const LAYERS = [
  ['base', ['base', 'contracts']],
  ['model', ['registry', 'hooks', 'policy']],
  ['backends', ['primitives', 'mcp-client', 'llm', 'embed', 'store', 'kernel', 'audit', 'budgets', 'clients', 'checkpoints', 'shared-state', 'telemetry']],
  ['calls', ['executor', 'proxy', 'project']],
  ['resolution', ['intent', 'resolver', 'prefetch', 'datasets']],
  ['agent', ['loop', 'runs', 'threads', 'anneal']],
  ['edges', ['http', 'mcp-server', 'cli', 'runner', 'console']],
  ['app', ['app']],
] as const;

const OUTSIDE_SYSTEMS = /^(hono|@hono\/|@modelcontextprotocol\/|undici|@lancedb\/|apache-arrow|pg$|@electric-sql\/|@huggingface\/|@energetic-ai\/|redis|@redis\/|@opentelemetry\/|node-llama-cpp$)/;
const MAY_REACH_OUTSIDE = new Set(['backends', 'edges']);

const SRC = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'src');

interface Import { from: string; to: string; external: boolean }

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return /\.(m?ts|tsx|mjs)$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path.relative(SRC, full)] : [];
  });
}

/** Static imports, re-exports and `import()` of the file, type-only ones included: a type names its layer too. */
function importsOf(file: string): Import[] {
  const text = readFileSync(path.join(SRC, file), 'utf8');
  const specs = [...text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'";]*?from\s+'([^']+)'|(?:^|\n)\s*import\s+'([^']+)'|import\(\s*'([^']+)'\s*\)/g)].map((m) => m[1] ?? m[2] ?? m[3] ?? '');
  return specs.map((spec) => {
    if (!spec.startsWith('.')) return { from: file, to: spec, external: true };
    const target = path.normalize(path.join(path.dirname(file), spec));
    return { from: file, to: target.endsWith('.mjs') ? target : resolveSource(target.replace(/\.js$/, '')), external: false };
  });
}

/** `x.js` in an import is the source `x.ts`, or `x.tsx` for a file of JSX. */
function resolveSource(base: string): string {
  return existsSync(path.join(SRC, `${base}.tsx`)) ? `${base}.tsx` : `${base}.ts`;
}

const folderOf = (file: string): string => (file.includes(path.sep) ? file.split(path.sep)[0] ?? file : '.');
const LAYER_OF = new Map<string, number>([...LAYERS.flatMap(([, folders], level) => folders.map((f) => [f, level] as [string, number]))]);
const layerName = (folder: string): string => LAYERS[LAYER_OF.get(folder) ?? 0]?.[0] ?? '?';

/** Strongly connected components of more than one node (Tarjan): each is a circle of imports. */
function circles(nodes: Iterable<string>, next: (node: string) => Iterable<string>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of next(v)) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) found.push(component.sort());
  };
  for (const node of nodes) if (!index.has(node)) visit(node);
  return found;
}

const files = sourceFiles(SRC);
const imports = files.flatMap(importsOf);
const local = imports.filter((i) => !i.external);

describe('the layers of DESIGN §8', () => {
  it('reads the imports it judges', () => {
    expect(files.length).toBeGreaterThan(300);
    const missing = local.filter((i) => !files.includes(i.to)).map((i) => `${i.from} → ${i.to}`);
    expect(missing, 'imports this test cannot resolve to a file of src/').toEqual([]);
  });

  it('gives every folder a layer, and keeps no file loose in src/', () => {
    expect(files.filter((f) => folderOf(f) === '.'), 'move the file into the folder of its layer (base/ for helpers every layer uses)').toEqual([]);
    const folders = [...new Set(files.map(folderOf))];
    expect(folders.filter((f) => !LAYER_OF.has(f)), "add the folder to LAYERS here, to the README's table of layers and to DESIGN §8").toEqual([]);
  });

  it("is the README's table of layers: each row names its layer's folders", () => {
    const readme = readFileSync(path.join(SRC, '..', 'README.md'), 'utf8');
    // `| layer | folders under src/ | what |` rows; a folder is written `name/`.
    const rows = [...readme.matchAll(/^\| (\w+) \| ([^|]*) \|/gm)].filter((m) => LAYERS.some(([name]) => name === m[1]));
    const table = rows.map((m) => [m[1], [...(m[2] ?? '').matchAll(/`([\w-]+)\/`/g)].map((f) => f[1]).sort()]);
    expect(table).toEqual(LAYERS.map(([name, folders]) => [name, [...folders].sort()]));
  });

  it('has no import that points up a layer', () => {
    const upward = local
      .filter((i) => (LAYER_OF.get(folderOf(i.to)) ?? 0) > (LAYER_OF.get(folderOf(i.from)) ?? 0))
      .map((i) => `${i.from} (${layerName(folderOf(i.from))}) → ${i.to} (${layerName(folderOf(i.to))})`);
    expect(upward).toEqual([]);
  });

  it('has no circle of files importing each other', () => {
    const next = new Map<string, string[]>();
    for (const i of local) next.set(i.from, [...(next.get(i.from) ?? []), i.to]);
    expect(circles(files, (f) => next.get(f) ?? [])).toEqual([]);
  });

  it('has no circle of folders importing each other', () => {
    const next = new Map<string, Set<string>>();
    for (const i of local) {
      const [a, b] = [folderOf(i.from), folderOf(i.to)];
      if (a !== b) next.set(a, (next.get(a) ?? new Set()).add(b));
    }
    expect(circles(next.keys(), (f) => next.get(f) ?? [])).toEqual([]);
  });

  it('reaches outside systems from backends and edges only', () => {
    const outside = imports
      .filter((i) => i.external && OUTSIDE_SYSTEMS.test(i.to) && !MAY_REACH_OUTSIDE.has(layerName(folderOf(i.from))))
      .map((i) => `${i.from} (${layerName(folderOf(i.from))}) → ${i.to}`);
    expect(outside).toEqual([]);
  });

  it('imports only packages the gateway depends on (not devDependencies, which an install for use leaves out)', () => {
    const manifest = JSON.parse(readFileSync(path.join(SRC, '..', 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const packageOf = (spec: string): string => spec.split('/').slice(0, spec.startsWith('@') ? 2 : 1).join('/');
    const missing = imports
      .filter((i) => i.external && !i.to.startsWith('node:') && !(packageOf(i.to) in manifest.dependencies))
      .map((i) => `${i.from} → ${i.to}`);
    expect(missing).toEqual([]);
  });
});
