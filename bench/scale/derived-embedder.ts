import type { Embedder } from '../../src/embed/embedder.js';
import { normalize } from '../../src/embed/vector-math.js';
import type { Tool } from '../../src/registry/types.js';
import { toolEmbeddingText } from '../../src/registry/tool-document.js';
import { gaussian, seedOf } from './seeded.js';
import { variantOf } from './synthetic-catalog.js';
import type { TemplateVectors } from './template-vectors.js';

/**
 * A bench-only `Embedder` for synthetic catalogs: embedding 100k documents with USE-lite takes
 * ~18 min, so each synthetic tool's vector is derived instead — its template's real USE-lite
 * vector plus seeded Gaussian noise (σ per dimension), renormalised; variant 0 gets the template
 * vector itself. It knows only the catalog's documents (it maps each text back to its tool), so
 * the real `openToolIndex().sync()` path runs unchanged. It measures search cost against size,
 * not accuracy: queries must go to the real model.
 */
export interface DerivedEmbedder extends Embedder {
  /** Time spent deriving vectors so far. */
  deriveMs(): number;
}

export interface DerivedEmbedderOptions {
  /** The synthetic catalog, in the order `syntheticTools` built it. */
  tools: Tool[];
  templates: TemplateVectors;
  sigma: number;
}

export function createDerivedEmbedder(options: DerivedEmbedderOptions): DerivedEmbedder {
  const { tools, templates, sigma } = options;
  const { dimensions } = templates;
  if (!(sigma >= 0 && sigma < 1)) throw new Error(`noise sigma must be in [0, 1), not ${sigma}`);
  const index = new Map<string, number>();
  tools.forEach((tool, i) => {
    const text = toolEmbeddingText(tool);
    if (index.has(text)) throw new Error(`synthetic tools ${tools[index.get(text) as number]?.id} and ${tool.id} have the same document; the variants must differ`);
    index.set(text, i);
  });
  let spent = 0;
  let closed = false;

  function derive(i: number): Float32Array {
    const at = variantOf(i, templates.count);
    const base = templates.data.subarray(at.template * dimensions, (at.template + 1) * dimensions);
    if (at.variant === 0) return Float32Array.from(base);
    const noise = gaussian(seedOf(at.template, at.variant));
    const values = new Float64Array(dimensions);
    for (let d = 0; d < dimensions; d++) values[d] = (base[d] as number) + sigma * noise();
    const unit = normalize(values);
    if (!unit) throw new Error(`derived vector of synthetic tool ${i} is degenerate`);
    return unit;
  }

  return {
    id: `${templates.embedderId}+synthetic-noise-${sigma}`,
    dimensions,
    async embed(texts, signal) {
      if (closed) throw new Error('the derived embedder is closed');
      signal?.throwIfAborted();
      const started = performance.now();
      const out = texts.map((text) => {
        const i = index.get(text);
        if (i === undefined) throw new Error(`the derived embedder only knows the synthetic catalog's documents, not "${text.slice(0, 60)}…"; embed queries with the real model`);
        return derive(i);
      });
      spent += performance.now() - started;
      return out;
    },
    async close() {
      closed = true;
      index.clear();
    },
    deriveMs: () => spent,
  };
}
