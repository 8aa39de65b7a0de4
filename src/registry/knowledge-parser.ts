/**
 * Knowledge entries: Markdown with YAML front matter. Front matter is read leniently (Kiwi MCP
 * entries carry fields such as source_url or references that we do not use); the fields we do
 * use are checked strictly.
 */
import { z } from 'zod';
import { findSignature, splitFrontMatter, stripSignatureLine } from './markdown-parts.js';
import { DEFAULT_KNOWLEDGE_VERSION, verifySignature } from './signature.js';
import { checkToolName } from './tool-name.js';
import type { Knowledge, Tier } from './types.js';
import { fail, makeIssue, type FileLabel, type IssueInput, type ParseResult } from './validation-error.js';
import { parseYamlSource } from './yaml-source.js';
import { zodIssuesToInputs, type FieldHints } from './zod-issues.js';

const knowledgeSchema = z.looseObject({
  id: z.string().min(1).optional(),
  zettel_id: z.string().min(1).optional(),
  title: z.string().min(1),
  entry_type: z.string().min(1),
  version: z.string().min(1).optional(),
  category: z.string().optional(),
  tags: z.array(z.string()).optional(),
});

const HINTS: FieldHints = {
  id: 'an id like api-patterns (A-Z, a-z, 0-9, "_", "." and "-")',
  zettel_id: 'an id like 20260124-api-patterns',
  title: 'a title, e.g. title: API patterns',
  entry_type: 'the kind of entry, e.g. entry_type: learning (or pattern, reference, ...)',
  version: 'a quoted string like "1.0.0"',
  category: 'a category name',
  tags: 'a list of strings, e.g. tags: [api, http]',
};

/** Fields a YAML number may be written for; the text as written is kept (`1.0`, `20260124`). */
const TEXT_FIELDS = ['id', 'zettel_id', 'version', 'category', 'title', 'entry_type'];

export function parseKnowledge(text: string, label: FileLabel, tier: Tier): ParseResult<Knowledge> {
  const toIssue = (input: IssueInput) => makeIssue('knowledge', label, input);
  const { text: content, removedLines } = stripSignatureLine('knowledge', text);
  const parts = splitFrontMatter(content);
  if (parts === null) {
    return fail([
      toIssue({
        line: 1 + removedLines,
        column: 1,
        text: 'no front matter found; start the entry with "---", then lines like "id: my-entry", "title: ...", "entry_type: learning", then "---"',
      }),
    ]);
  }
  const yaml = parseYamlSource(parts.yaml, parts.yamlLine + removedLines);
  if (!yaml.ok) return fail(yaml.errors.map(toIssue));
  const source = yaml.value;
  if (source.data === null || typeof source.data !== 'object' || Array.isArray(source.data)) {
    return fail([toIssue({ line: parts.yamlLine + removedLines, column: 1, text: 'the front matter must be "key: value" lines, e.g. "id: my-entry"' })]);
  }
  const raw: Record<string, unknown> = { ...(source.data as Record<string, unknown>) };
  for (const key of TEXT_FIELDS) {
    if (typeof raw[key] === 'number') raw[key] = source.scalarSource([key]) ?? String(raw[key]);
  }

  const parsed = knowledgeSchema.safeParse(raw, { reportInput: true });
  if (!parsed.success) return fail(zodIssuesToInputs(parsed.error.issues, { source, hints: HINTS }).map(toIssue));
  const fields = parsed.data;
  const issues: IssueInput[] = [];
  const id = fields.id ?? fields.zettel_id;
  if (id === undefined) {
    issues.push({ field: 'id', text: `is missing; write ${HINTS['id']} (Kiwi MCP's zettel_id: is accepted too)`, ...source.locate([]) });
  } else {
    if (fields.id !== undefined && fields.zettel_id !== undefined && fields.id !== fields.zettel_id) {
      issues.push({ field: 'zettel_id', text: `says "${fields.zettel_id}" but id says "${fields.id}"; keep only id`, ...source.locate(['zettel_id']) });
    }
    const check = checkToolName(id);
    const key = fields.id !== undefined ? 'id' : 'zettel_id';
    if (!check.ok) issues.push({ field: key, text: check.reason, ...source.locate([key]) });
  }
  if (verifySignature('knowledge', text).status === 'invalid') {
    issues.push({ line: 1, column: 1, text: 'signature does not match the content; run `kiwi sign <file>` after reviewing the change' });
  }
  if (issues.length > 0 || id === undefined) return fail(issues.map(toIssue));

  const entry: Knowledge = {
    id,
    title: fields.title,
    entryType: fields.entry_type,
    version: fields.version ?? DEFAULT_KNOWLEDGE_VERSION,
    tags: fields.tags ?? [],
    body: parts.body,
    signature: findSignature('knowledge', text),
    source: { path: label.file, tier },
  };
  if (fields.category !== undefined) entry.category = fields.category;
  return { ok: true, value: entry };
}
