import path from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

/**
 * Prints the slowest test files after a run, so a file that grows slow shows up at once: its
 * whole time in the worker (setting up, importing its modules, and its hooks and tests), with
 * the import part apart, and its project. Set KIWI_SLOWEST_FILES=N for another count (0: none).
 */
export default class SlowestFilesReporter implements Reporter {
  private readonly root = process.cwd();

  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const count = Number(process.env['KIWI_SLOWEST_FILES'] ?? 10);
    if (!Number.isInteger(count) || count <= 0 || testModules.length === 0) return;
    const rows = testModules.map((m) => {
      const d = m.diagnostic();
      const importMs = d.collectDuration + d.setupDuration + d.prepareDuration + d.environmentSetupDuration;
      return { file: path.relative(this.root, m.moduleId), project: m.project.name, totalMs: importMs + d.duration, importMs, tests: [...m.children.allTests()].length };
    });
    rows.sort((a, b) => b.totalMs - a.totalMs);
    const sum = rows.reduce((s, r) => s + r.totalMs, 0);
    const shown = rows.slice(0, count);
    const width = Math.max(...shown.map((r) => r.file.length));
    const lines = shown.map((r) => `  ${(r.totalMs / 1000).toFixed(1).padStart(6)} s  ${r.file.padEnd(width)}  ${String(r.tests).padStart(3)} tests  (import ${(r.importMs / 1000).toFixed(1)} s${r.project ? `, ${r.project}` : ''})`);
    const part = (shown.reduce((s, r) => s + r.totalMs, 0) / Math.max(sum, 1)) * 100;
    process.stdout.write(`\n The ${shown.length} slowest of ${rows.length} test files (${part.toFixed(0)}% of ${(sum / 1000).toFixed(0)} s summed over the workers):\n${lines.join('\n')}\n`);
  }
}
