import type { AuditRecord } from '../audit/audit-record.js';
import type { PrimitiveDeps } from '../executor/execute-plan.js';
import type { AllowedPlan } from './authorization.js';

export type Isolation = Pick<AuditRecord, 'sandbox' | 'sandbox_reason'>;

/**
 * How a call's plan runs, for its audit record: `bwrap` when a process of the call runs in the
 * sandbox, `podman` in a container (with its level), `none` with the reason otherwise — so a reader of the log sees a call that ran
 * unsandboxed, and why (`sandbox: off`, bwrap missing at start), without the start-up warning.
 * Stdio MCP servers run in the same sandbox as subprocess tools (the app wires one to both).
 */
export function isolationOf(plan: AllowedPlan, primitives: PrimitiveDeps): Isolation {
  const processIsolation = (): Isolation => {
    const sandbox = primitives.sandbox?.sandbox;
    if (sandbox?.active) return { sandbox: 'bwrap' };
    return { sandbox: 'none', sandbox_reason: sandbox?.reason ?? 'no sandbox was set up for subprocess tools' };
  };
  switch (plan.kind) {
    case 'subprocess':
      if (plan.isolation === 'trusted') return { sandbox: 'none', sandbox_reason: 'isolation: trusted, a plain subprocess' };
      if (plan.isolation === 'standard') return processIsolation();
      return { sandbox: 'podman', sandbox_reason: `isolation: ${plan.isolation}` };
    case 'mcp':
      return plan.server.transport === 'stdio' ? processIsolation() : { sandbox: 'none', sandbox_reason: `MCP server over ${plan.server.transport}: no process runs here` };
    case 'http':
      return { sandbox: 'none', sandbox_reason: 'an HTTP request by the gateway: no process runs' };
    case 'read':
      return { sandbox: 'none', sandbox_reason: 'read by the gateway: no process runs' };
    case 'thread':
      return { sandbox: 'none', sandbox_reason: 'a directive thread: each call it makes has its own record' };
    case 'rollback':
      return { sandbox: 'none', sandbox_reason: 'a checkpoint restored by the gateway with git: no tool runs' };
    case 'create':
      return { sandbox: 'none', sandbox_reason: 'an item written by the gateway: it runs nothing (the item runs at its own isolation when called)' };
  }
}
