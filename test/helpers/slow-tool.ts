import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { allowTools } from './demo-project.js';
import { REPO_ROOT } from './temp-project.js';

/**
 * `wait_for_batch`, a tool that never finishes on its own, added to a copy of the demo project
 * (and to its policy): to see what a cancel, a shutdown or a crash does to a running call.
 * Returns the file where the tool writes its pid once it runs.
 */
export function addSlowTool(root: string): string {
  const dir = path.join(root, '.ai', 'tools', 'project');
  cpSync(path.join(REPO_ROOT, 'test', 'fixtures', 'gateway-loop', 'slow.mjs'), path.join(dir, 'slow.mjs'));
  writeFileSync(
    path.join(dir, 'wait_for_batch.yaml'),
    'tool_id: wait_for_batch\ntool_type: script\nexecutor: node_runtime\nversion: "1.0.0"\ndescription: "Wait until the nightly batch job has finished"\nconfig:\n  script: slow.mjs\nparameters: []\n',
  );
  allowTools(root, ['wait_for_batch']);
  // The tests watch the tool's host pid, which it writes next to itself: both a sandbox's pid
  // namespace and its read-only project would hide that, so these projects opt out of it.
  const policy = path.join(root, '.ai', 'config', 'policy.yaml');
  const text = readFileSync(policy, 'utf8');
  writeFileSync(policy, /^sandbox:$/mu.test(text) ? text.replace(/^sandbox:$/mu, 'sandbox:\n  mode: off') : `${text}sandbox: { mode: off }\n`);
  return path.join(dir, 'slow.pid');
}

/** The pid the slow tool wrote; throws on anything but a positive integer (kill(0) would signal the test itself). */
export function readSlowPid(file: string): number {
  const text = readFileSync(file, 'utf8');
  const pid = Number(text);
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`${file} holds ${JSON.stringify(text)}, not a pid`);
  return pid;
}
