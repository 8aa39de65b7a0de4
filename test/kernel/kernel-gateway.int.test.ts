import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { KERNEL_STATE_DIR } from '../../src/kernel/open-kernel.js';
import { serveGateway } from '../helpers/serve-gateway.js';
import { createTempProject } from '../helpers/temp-project.js';

/**
 * The kernel served by the gateway as `kiwi serve` runs it: its state in an embedded PGlite on
 * disk under .ai/state/kernel/, kept across a restart.
 */

const project = createTempProject();
afterAll(() => project.remove());

describe('the kernel in the gateway', () => {
  it('keeps its executions and their events on disk across a restart', async () => {
    const first = await serveGateway(project.root);
    let id: string;
    try {
      const res = await fetch(`${first.server.url}/v0/executions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ agent_id: 'a', input: { q: 'x' } }) });
      expect(res.status).toBe(201);
      id = ((await res.json()) as { id: string }).id;
      expect(existsSync(path.join(project.root, KERNEL_STATE_DIR))).toBe(true);
    } finally {
      await first.close();
    }
    const second = await serveGateway(project.root);
    try {
      expect(await (await fetch(`${second.server.url}/v0/executions/${id}`)).json()).toMatchObject({ id, status: 'pending', input: { q: 'x' } });
      const cancelled = await fetch(`${second.server.url}/v0/executions/${id}/cancel`, { method: 'POST' });
      expect(cancelled.status).toBe(200);
      const log = (await (await fetch(`${second.server.url}/v0/executions/${id}/events`)).json()) as { events: { sequence: number; type: string }[] };
      expect(log.events.map((e) => `${e.sequence} ${e.type}`)).toEqual(['1 execution.created', '2 execution.cancelled']);
    } finally {
      await second.close();
    }
  }, 60_000);
});
