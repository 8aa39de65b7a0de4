import { describe, expect, it } from 'vitest';
import { createIndexProgress } from '../../src/cli/index-progress.js';
import type { CliIo } from '../../src/cli/io.js';
import type { RuntimeSyncReport } from '../../src/resolver/resolver-runtime.js';

/** An io that records every line, and every status rewrite when it stands for a terminal. */
function recorder(terminal: boolean) {
  const events: string[] = [];
  const io: CliIo = {
    out: (line) => events.push(`out ${line}`),
    err: (line) => events.push(`err ${line}`),
    ...(terminal ? { status: (text: string) => void events.push(`status ${text}`) } : {}),
  };
  return { io, events };
}

/** A clock the test moves by hand: no timers, no waiting. */
function clock(start = 1_000) {
  let ms = start;
  return { now: () => ms, advance: (by: number) => void (ms += by) };
}

const REPORT = {} as RuntimeSyncReport;

describe('index progress', () => {
  it('on a first start elsewhere than a terminal: what happens, a line every 200 embedded or 5 s, then the count and the time', () => {
    const { io, events } = recorder(false);
    const time = clock();
    const progress = createIndexProgress(io, { now: time.now });
    progress.start?.('tools', 400, 'new');
    for (const done of [64, 128, 192, 256, 320]) progress.embedded?.('tools', done, 400);
    time.advance(5_000);
    progress.embedded?.('tools', 384, 400);
    progress.embedded?.('tools', 400, 400);
    progress.start?.('items', 6, 'new');
    progress.embedded?.('items', 6, 6);
    time.advance(141_200);
    progress.end?.(REPORT);
    expect(events).toEqual([
      'err kiwi: first start: embedding 400 tools into .ai/vectors; later starts reuse it',
      'err kiwi: indexing tools: 256/400 embedded',
      'err kiwi: indexing tools: 384/400 embedded',
      'err kiwi: embedding 6 directives and knowledge entries into .ai/vectors',
      'err kiwi: search index ready: 400 tools and 6 directives and knowledge entries embedded into .ai/vectors in 146.2 s',
    ]);
  });

  it('on a terminal: one counter rewritten in place after each batch, cleared before the last line', () => {
    const { io, events } = recorder(true);
    const time = clock();
    const progress = createIndexProgress(io, { now: time.now });
    progress.start?.('tools', 150, 'new');
    for (const done of [64, 128, 150]) progress.embedded?.('tools', done, 150);
    time.advance(2_500);
    progress.end?.(REPORT);
    expect(events).toEqual([
      'err kiwi: first start: embedding 150 tools into .ai/vectors; later starts reuse it',
      'status kiwi: indexing tools: 0/150 embedded',
      'status kiwi: indexing tools: 64/150 embedded',
      'status kiwi: indexing tools: 128/150 embedded',
      'status kiwi: indexing tools: 150/150 embedded',
      'status ',
      'err kiwi: search index ready: 150 tools embedded into .ai/vectors in 2.5 s',
    ]);
  });

  it('says what changed on a later start, why a rebuild takes long, and nothing at all when nothing is embedded', () => {
    const later = recorder(false);
    const progress = createIndexProgress(later.io, { now: clock().now });
    progress.start?.('tools', 3, 'kept');
    progress.embedded?.('tools', 3, 3);
    progress.end?.(REPORT);
    expect(later.events).toEqual(['err kiwi: embedding 3 new or changed tools into .ai/vectors', 'err kiwi: search index ready: 3 tools embedded into .ai/vectors in 0.0 s']);

    const rebuilt = recorder(false);
    createIndexProgress(rebuilt.io, { now: clock().now }).start?.('tools', 40, 'rebuilt');
    expect(rebuilt.events).toEqual(['err kiwi: rebuilding the search index: embedding 40 tools into .ai/vectors; later starts reuse it']);

    for (const terminal of [false, true]) {
      const quiet = recorder(terminal);
      createIndexProgress(quiet.io).end?.(REPORT);
      expect(quiet.events).toEqual([]);
    }
  });

  it('leaves the last line to a command that prints its own summary', () => {
    const { io, events } = recorder(true);
    const progress = createIndexProgress(io, { now: clock().now, summary: false });
    progress.start?.('items', 2, 'kept');
    progress.embedded?.('items', 2, 2);
    progress.end?.(REPORT);
    expect(events).toEqual([
      'err kiwi: embedding 2 new or changed directives and knowledge entries into .ai/vectors',
      'status kiwi: indexing directives and knowledge entries: 0/2 embedded',
      'status kiwi: indexing directives and knowledge entries: 2/2 embedded',
      'status ',
    ]);
  });
});
