import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createCounters } from '../../src/prefetch/counters.js';
import { createPrefetchDispatcher, type PrefetchDispatcher } from '../../src/prefetch/dispatcher.js';
import { createPrefetchCache } from '../../src/prefetch/prefetch-cache.js';
import { createPrefetchSession } from '../../src/prefetch/prefetch-session.js';
import { createPredictor } from '../../src/prefetch/predictor.js';
import type { Snapshot } from '../../src/prefetch/types.js';
import { openWorld, type World } from '../fixtures/prefetch/prefetch-world.js';
import { tableTransitions } from '../fixtures/prefetch/table-transitions.js';

let world: World;

beforeAll(async () => {
  world = await openWorld();
});

afterEach(async () => {
  // Speculative calls outlive the test's assertions; none may still run into the next test.
  world.server.release();
  await world.settle();
});

afterAll(async () => {
  await world?.close();
});

function setup() {
  const counters = createCounters();
  const cache = createPrefetchCache({ counters });
  const transitions = tableTransitions({});
  const real = createPrefetchDispatcher({
    predictor: createPredictor({ resolver: world.resolver, transitions }),
    resolver: world.resolver,
    cache,
    tools: world.tools,
    call: world.call,
    session: 'prefetch-test',
    caller: { client: 'prefetch-test' },
    counters,
  });
  // The real dispatcher, with what the session hands it written down.
  const seen: { snapshot: Snapshot; previousTool: string | null }[] = [];
  const cancels: (boolean | undefined)[] = [];
  const dispatcher: PrefetchDispatcher = {
    onSnapshot(snapshot, previousTool) {
      seen.push({ snapshot, previousTool });
      real.onSnapshot(snapshot, previousTool);
    },
    speculateCall: (entry, call) => real.speculateCall(entry, call),
    cancel(options) {
      cancels.push(options?.speculations);
      real.cancel(options);
    },
    idle: () => real.idle(),
  };
  return { counters, cache, transitions, dispatcher, seen, cancels };
}

function stream(session: ReturnType<typeof createPrefetchSession>, text: string, chunk = 9): void {
  for (let i = 0; i < text.length; i += chunk) session.onText(text.slice(i, i + chunk));
}

describe('prefetch session', () => {
  it('turns streamed text into snapshots, and an intent into a fresh start with the previous tool', async () => {
    const { dispatcher, seen, cancels, transitions, cache } = setup();
    const session = createPrefetchSession({ dispatcher });
    stream(session, 'To enrich these leads I will look up the web domain of "Acme Corp".');
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ previousTool: null, snapshot: { query: 'To enrich these leads I will look up the web domain of "Acme Corp".' } });
    session.onIntent('look up the web domain of "Acme Corp"', 'lookup_company_domain');
    expect(cancels).toEqual([false]); // predictions cancelled, speculations kept
    stream(session, 'Now I will update the CRM record of "Acme Corp".');
    expect(seen[1]?.previousTool).toBe('lookup_company_domain');
    expect(seen[1]?.snapshot.text).toBe('Now I will update the CRM record of "Acme Corp".'); // nothing from before the intent
    await dispatcher.idle();
    expect(transitions.asked).toContain('lookup_company_domain');
    expect(cache.get('Now I will update the CRM record of "Acme Corp".')).toBeDefined();
    session.onResolved('update_crm_record');
    stream(session, ' Then I will get the weather forecast for "Oslo".');
    expect(seen[2]?.previousTool).toBe('update_crm_record');
    await dispatcher.idle();
  });

  it('end() cancels everything, speculative calls included, and ignores text after it', async () => {
    world.server.hold();
    const { dispatcher, seen, cancels, counters, cache } = setup();
    const session = createPrefetchSession({ dispatcher, snapshotter: { everyChars: 200, minChars: 10 } });
    const before = world.server.requests.length;
    stream(session, 'Now I will fetch the sales report of quarter "Q3".');
    await dispatcher.idle();
    const speculation = cache.get('Now I will fetch the sales report of quarter "Q3".')?.speculations[0];
    expect(speculation?.state).toBe('running');
    await world.server.arrived(before + 1);
    session.onIntent('fetch the sales report of quarter "Q3"');
    expect(speculation?.state).toBe('running');
    session.end();
    session.end();
    expect(cancels).toEqual([false, undefined]);
    await speculation?.outcome;
    expect(speculation?.state).toBe('discarded');
    expect(counters.speculativeDiscarded).toBe(1);
    const count = seen.length;
    stream(session, 'More text that would have made a snapshot before the end.');
    session.onIntent('anything');
    expect(seen.length).toBe(count);
    expect(cancels).toHaveLength(2);
    world.server.release();
  });

  it('snapshots the intent while it is written: every ~24 characters and when a quoted value closes', () => {
    const { dispatcher, seen } = setup();
    const session = createPrefetchSession({ dispatcher });
    const intent = ' fetch the sales report of quarter "Q3" for the board';
    let partial = '';
    for (const piece of intent.match(/.{1,4}/gs) ?? []) {
      partial += piece;
      session.onIntentProgress(partial);
    }
    const queries = seen.map((s) => s.snapshot.query);
    expect(queries[0]?.length).toBeGreaterThanOrEqual(16);
    expect(queries).toContain('fetch the sales report of quarter "Q3"');
    // Each is a beginning of the intent, growing.
    for (const q of queries) expect(intent.trim().startsWith(q)).toBe(true);
    expect([...queries].sort((a, b) => a.length - b.length)).toEqual(queries);
    // The next intent starts over.
    session.onIntent(intent.trim());
    const count = seen.length;
    session.onIntentProgress(' get the weather forecast for "Oslo"');
    expect(seen.length).toBe(count + 1);
  });

  it('runs a tool ahead on an intent being written only once its value is closed, never on the value cut mid-quote', async () => {
    const { dispatcher, seen, counters, cache } = setup();
    const session = createPrefetchSession({ dispatcher });
    const intent = 'look up the web domain of "Globex International Holdings"';
    let partial = '';
    for (const piece of intent.match(/.{1,5}/gs) ?? []) {
      partial += piece;
      session.onIntentProgress(partial);
      await dispatcher.idle();
    }
    const cut = seen.map((x) => x.snapshot.query).filter((q) => !q.endsWith('"'));
    expect(cut.length, 'snapshots of the intent cut inside its value were searched').toBeGreaterThan(0);
    for (const q of cut) expect(cache.get(q)?.speculations ?? [], q).toEqual([]);
    const speculations = cache.get(intent)?.speculations ?? [];
    expect(speculations.map((x) => x.argsKey)).toEqual(['{"company":"Globex International Holdings"}']);
    expect(counters.speculativeStarted).toBe(1);
    expect(counters.speculativeRefused).toBeGreaterThanOrEqual(1);
    await speculations[0]?.outcome;
  });
});
