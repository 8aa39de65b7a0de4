/**
 * The `dev` splits cut here for datasets published without one (shared/bench/FORMAT.md: "cut one,
 * by domain or by source, never by case, before fitting anything on them").
 *
 * The rule, the same for each: the dataset's domains (or sources) in alphabetical order, every
 * third one starting with the first, are `dev`. That is about a third of them, picked by name
 * only: not by size and not by how well the resolver does on them. Cutting by domain rather than
 * by case keeps near-duplicate intents about the same tools from landing on both sides, so a
 * test split scores catalogs' parts that nothing was fitted on.
 *
 * A dev domain is dev in every case file of the dataset: its multi-call cases leave the `multi`
 * split too, so nothing reported as held out shares a domain with what was fitted.
 *
 * The values are written out rather than computed from the data, so that a domain added to a
 * dataset later lands in its test split instead of moving others between the splits.
 */

export interface DevCut {
  /** The case field that names the domain or source (an extra string field of the cases). */
  field: string;
  /** Its values whose cases are `dev`; every other case stays in its file's split. */
  dev: readonly string[];
}

export const DEV_CUTS: Readonly<Record<string, DevCut>> = {
  // Domains: aviation, bank, gov, hospital, hotel, hr, insurance, logistics, shopping,
  // telecommunications. Dev: the 1st, 4th, 7th and 10th, 193 of the 446 one-call intents and 101
  // of the 250 multi-call ones.
  callnavi: { field: 'domain', dev: ['aviation', 'hospital', 'insurance', 'telecommunications'] },
  // Sources: executable (the RapidAPI tools), glaive, sgd; no tool is shared between them. Dev: the
  // 1st, 69 of the 238 call sequences.
  nestful: { field: 'source', dev: ['executable'] },
};

