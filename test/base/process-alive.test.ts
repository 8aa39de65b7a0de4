import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { processAlive } from '../../src/base/process-alive.js';

describe('processAlive', () => {
  it('is true for a running process, false for one that has exited and been reaped', () => {
    expect(processAlive(process.pid)).toBe(true);
    const child = spawnSync(process.execPath, ['-e', '']);
    expect(processAlive(child.pid as number)).toBe(false);
  });

  it('is false for what is not a pid: 0 and -1 would signal process groups', () => {
    for (const pid of [0, -1, -process.pid, 1.5, Number.NaN, Number.MAX_VALUE]) expect(processAlive(pid), String(pid)).toBe(false);
  });
});
