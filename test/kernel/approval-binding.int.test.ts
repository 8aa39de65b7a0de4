import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LOCAL_CALLER } from '../../src/clients/client-auth.js';
import { openKernel, type Kernel } from '../../src/kernel/open-kernel.js';
import { postgresAvailable } from '../helpers/postgres-server.js';
import { postgresDatabase } from '../helpers/run-resources.js';

/**
 * A grant binds to the policy that asked for it (issue 22): with two gateways on one Postgres
 * server, an approval asked under one's kernel policy and answered through the other, whose
 * policy differs, is refused and nothing runs; under the same policy it is granted.
 */

const dir = mkdtempSync(path.join(tmpdir(), 'kiwi-approval-binding-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function policyFile(name: string, reason: string): string {
  const file = path.join(dir, `${name}.yaml`);
  writeFileSync(file, `rules:\n  - id: ask\n    priority: 10\n    when: { tool_ids: ["deploy_*"] }\n    then: { decision: require_approval, reason: "${reason}" }\ndefault: { decision: deny, reason: "nothing else" }\n`);
  return file;
}

/** An execution of the local operator's, blocked on the approval of a deploy; returns its ids. */
async function blockedDeploy(kernel: Kernel): Promise<{ id: string; stepId: string }> {
  const assigned: { session_id: string }[] = [];
  const agentId = `deployer-${Math.random().toString(36).slice(2, 8)}`;
  await kernel.agents.connect({ client: 'local', agentId, consumerId: 'c1', channel: { send: (event, data) => (event === 'execution.assigned' && assigned.push(data as { session_id: string }), true), close: () => undefined } });
  const { execution } = await kernel.executions.create({ client: 'local', agentId, input: null, labels: {} });
  await kernel.agents.assign(execution.id);
  const result = await kernel.intents.submit({ actor: LOCAL_CALLER, executionId: execution.id, sessionId: assigned.at(-1)?.session_id, intent: { type: 'invoke_tool', tool_id: 'deploy_app', arguments: { env: 'prod' } } });
  expect(result).toMatchObject({ accepted: true, pendingApproval: true });
  return { id: execution.id, stepId: result.stepId as string };
}

/** Why the execution resumed, each time it did. */
async function resumed(kernel: Kernel, id: string): Promise<unknown[]> {
  return (await kernel.executions.events(id, 0, 1000)).filter((e) => e.type === 'execution.resumed').map((e) => e.payload['reason']);
}

describe.runIf(postgresAvailable() || process.env['KIWI_REQUIRE_POSTGRES'] === '1')('an approval and the policy that asked for it, across gateways on one Postgres', () => {
  it('is granted under the same policy, and refused under another; a denial is always taken', async () => {
    const server = await postgresDatabase();
    const options = { databaseUrl: server.url, root: dir, reaperIntervalMs: 0, queueIntervalMs: 0 };
    const asking = await openKernel({ ...options, policyFile: policyFile('one', 'deploys need a person') });
    const same = await openKernel({ ...options, policyFile: policyFile('same', 'deploys need a person') });
    const changed = await openKernel({ ...options, policyFile: policyFile('two', 'deploys need two people now') });
    try {
      const first = await blockedDeploy(asking);
      await same.signals.send(first.id, { signalType: 'step.approve', payload: { step_id: first.stepId, approved: true } });
      expect(await resumed(asking, first.id)).toEqual(['approval granted']);

      const second = await blockedDeploy(asking);
      await expect(changed.signals.send(second.id, { signalType: 'step.approve', payload: { step_id: second.stepId, approved: true } })).rejects.toThrow(/the kernel policy changed since step .* asked for approval .*nothing was run/);
      expect((await asking.executions.get(second.id)).status).toBe('blocked');
      expect(await resumed(asking, second.id)).toEqual([]);
      await changed.signals.send(second.id, { signalType: 'step.approve', payload: { step_id: second.stepId, approved: false } });
      expect(await resumed(asking, second.id)).toEqual(['approval denied']);
    } finally {
      await Promise.all([asking.close(), same.close(), changed.close()]);
      await server.stop();
    }
  }, 60_000);
});
