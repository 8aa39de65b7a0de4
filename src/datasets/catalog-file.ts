import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { parseToolManifest } from '../registry/tool-manifest.js';
import type { Tool } from '../registry/types.js';

/** One catalog line (shared/bench/FORMAT.md). Loose: catalogs come from elsewhere. */
const CatalogLine = z.looseObject({
  name: z.string().min(1),
  description: z.string().default(''),
  parameters: z.looseObject({ type: z.literal('object').optional(), properties: z.record(z.string(), z.unknown()).default({}), required: z.array(z.string()).optional() }).default({ properties: {} }),
  tags: z.array(z.string()).optional(),
});

export interface ImportedCatalog {
  tools: Tool[];
  /** Tool id -> the catalog's name, where the name is not a valid tool id and had to be respelt. */
  names: Map<string, string>;
  /** Lines that could not become tools, with the registry's reason. */
  skipped: string[];
}

/**
 * Imports a catalog as schema-only `api` tools through the registry's own manifest validation.
 * They point at no URL: importing or benchmarking never executes anything.
 */
export async function importCatalog(file: string): Promise<ImportedCatalog> {
  const lines = (await readFile(file, 'utf8')).split('\n');
  const tools: Tool[] = [];
  const skipped: string[] = [];
  const names = new Map<string, string>();
  const seen = new Set<string>();
  lines.forEach((line, index) => {
    if (!line.trim()) return;
    const where = `${path.basename(file)}:${index + 1}`;
    let parsed;
    try {
      parsed = CatalogLine.safeParse(JSON.parse(line));
    } catch (error) {
      skipped.push(`${where}: not JSON (${error instanceof Error ? error.message : error})`);
      return;
    }
    if (!parsed.success) {
      skipped.push(`${where}: ${parsed.error.issues[0]?.path.join('.')}: ${parsed.error.issues[0]?.message}`);
      return;
    }
    const c = parsed.data;
    // Our ids are [A-Za-z0-9_.-]; other catalogs allow more (`PDF&URLTool`). Respell, and score by the original name.
    const id = c.name.replace(/[^A-Za-z0-9_.-]/g, '_');
    if (seen.has(id)) {
      skipped.push(`${where}: duplicate name ${c.name}`);
      return;
    }
    if (id !== c.name) names.set(id, c.name);
    const manifest = {
      tool_id: id,
      tool_type: 'api',
      executor: 'http_client',
      version: '1.0.0',
      description: c.description,
      mutates_state: true,
      parameters: { type: 'object', properties: c.parameters.properties, required: c.parameters.required ?? [] },
      ...(c.tags ? { tags: c.tags } : {}),
    };
    // JSON is YAML, so the catalog goes through exactly the validation a manifest file would.
    const result = parseToolManifest(JSON.stringify(manifest), { file: where, display: where }, 'project');
    if (result.ok) {
      seen.add(id);
      tools.push(result.value);
    } else skipped.push(result.issues.map((i) => i.message).join('; '));
  });
  return { tools, names, skipped };
}
