import { isMap, parseDocument, Scalar, type Document } from 'yaml';
import { z } from 'zod';
import { KiwiError } from '../base/errors.js';
import { readCappedFile } from '../base/read-capped-file.js';
import { replaceFile } from '../base/replace-file.js';
import { formatFieldPath } from '../registry/validation-error.js';
import { parseYamlSource, yamlFailure } from '../registry/yaml-source.js';
import { shownPath } from '../base/shown-path.js';
import { itemId, itemVersion } from '../store/registry-tier/tier-version.js';

/**
 * `.ai/config/registry.yaml`: the versions of database-tier items this project runs; the tier's
 * other items and versions it does not load. Committed with the project, so every checkout and
 * replica runs the same bytes.
 *
 *   pins:
 *     weather_forecast: "1.2.0"
 */
export const REGISTRY_CONFIG_FILE = '.ai/config/registry.yaml';

const MAX_FILE_BYTES = 256 * 1024;

const pinVersion = z.unknown().superRefine((value, ctx) => {
  if (typeof value === 'number') ctx.addIssue({ code: 'custom', message: `YAML reads ${value} as a number; quote the version ("${value}")` });
  else if (!itemVersion.safeParse(value).success) ctx.addIssue({ code: 'custom', message: 'a version is numbers separated by dots, like "1.2.0"' });
});

const registryConfig = z.strictObject({ pins: z.record(itemId, pinVersion).optional() });

/** The pins of the project at `root`: id → version; none when the file is absent. */
export async function readRegistryPins(file: string, root: string): Promise<Record<string, string>> {
  const shown = shownPath(root, file);
  const text = await readPinsText(file, shown);
  return text === undefined ? {} : parsePins(text, shown);
}

/** The file's text, or undefined when there is none. */
async function readPinsText(file: string, shown: string): Promise<string | undefined> {
  try {
    return (await readCappedFile(file, MAX_FILE_BYTES, () => new KiwiError('INVALID_INPUT', `${shown}: larger than ${MAX_FILE_BYTES} bytes; it holds one line per pinned item`))).toString('utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    if (error instanceof KiwiError) throw error;
    throw new KiwiError('INVALID_INPUT', `${shown}: cannot be read (${(error as Error).message})`);
  }
}

function parsePins(text: string, shown: string): Record<string, string> {
  const parsed = parseYamlSource(text);
  if (!parsed.ok) {
    throw new KiwiError('INVALID_INPUT', yamlFailure(shown, parsed.errors));
  }
  const checked = registryConfig.safeParse(parsed.value.data ?? {});
  if (checked.success) return Object.fromEntries(Object.entries(checked.data.pins ?? {}).map(([id, v]) => [id, v as string]));
  const issue = checked.error.issues[0];
  const at = issue?.path ?? [];
  const pos = parsed.value.locate(at);
  const what = issue?.code === 'unrecognized_keys' ? `unknown field ${issue.keys.join(', ')}; the file has one section, pins: { ID: "VERSION" }` : (issue?.message ?? 'invalid');
  throw new KiwiError('INVALID_INPUT', `${pos === undefined ? shown : `${shown}:${pos.line}:${pos.column}`}: ${at.length === 0 ? '' : `${formatFieldPath(at)}: `}${what}`);
}

/**
 * Pins `id` to `version`, or removes its pin (`version` undefined), keeping the file's comments
 * and other pins; checked as a read checks it, so a file this cannot parse is left as it is, and
 * so is a file that does not pin an id whose pin is to go. Returns the version it was pinned to
 * before, if any.
 */
export async function writeRegistryPin(file: string, root: string, id: string, version: string | undefined): Promise<string | undefined> {
  const shown = shownPath(root, file);
  const text = (await readPinsText(file, shown)) ?? '';
  const before = parsePins(text, shown)[id];
  if (version === undefined && before === undefined) return undefined;
  // Checked above as a map of pins, or nothing (an empty file, comments alone).
  const doc: Document = parseDocument(text);
  if (!isMap(doc.contents)) doc.contents = doc.createNode({});
  if (version === undefined) doc.deleteIn(['pins', id]);
  else {
    // Quoted: YAML reads an unquoted 1.2 as a number, which the file refuses.
    const quoted = new Scalar(version);
    quoted.type = Scalar.QUOTE_DOUBLE;
    doc.setIn(['pins', id], quoted);
  }
  await replaceFile(file, doc.toString());
  return before;
}
