/**
 * Whether the process `pid` exists: signal 0 reaches it, or is refused because it belongs to
 * another user (EPERM). Anything but a positive integer is no process: kill(0) and kill(-1)
 * address process groups, and would answer "alive" for a lock file holding 0.
 */
export function processAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
