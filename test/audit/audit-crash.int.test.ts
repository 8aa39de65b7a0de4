import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createAuditLog } from '../../src/audit/audit-log.js';
import { readAuditTailWithStats } from '../../src/audit/audit-reader.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const fixture = path.join(repoRoot, 'test/fixtures/audit/crash-writer.mjs');

let work: string;
let compiledAuditLog: string;
const children: ChildProcess[] = [];

/** Transpiles a source file and its relative imports, so a plain `node` child runs the real writer. */
async function transpileTree(entry: string, outRoot: string): Promise<string> {
  const queue = [entry];
  const seen = new Set<string>();
  while (queue.length > 0) {
    const file = queue.pop() as string;
    if (seen.has(file)) continue;
    seen.add(file);
    const source = await readFile(file, 'utf8');
    const { outputText } = ts.transpileModule(source, {
      fileName: file,
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true },
    });
    const out = path.join(outRoot, path.relative(repoRoot, file).replace(/\.ts$/, '.js'));
    await mkdir(path.dirname(out), { recursive: true });
    await writeFile(out, outputText);
    for (const match of source.matchAll(/from '(\.{1,2}\/[^']+)\.js'/g)) {
      queue.push(path.resolve(path.dirname(file), `${match[1]}.ts`));
    }
  }
  return path.join(outRoot, path.relative(repoRoot, entry).replace(/\.ts$/, '.js'));
}

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'kiwi-audit-crash-'));
  const build = path.join(work, 'build');
  await mkdir(build);
  await writeFile(path.join(build, 'package.json'), '{"type":"module"}');
  await symlink(path.join(repoRoot, 'node_modules'), path.join(build, 'node_modules'), 'dir');
  compiledAuditLog = await transpileTree(path.join(repoRoot, 'src/audit/audit-log.ts'), build);
});

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

/** Starts the writer child and resolves with the durable record count once it reached `atLeast`. */
function runUntilFlushed(dir: string, session: string, atLeast: number): Promise<{ child: ChildProcess; durable: number }> {
  const child = spawn(process.execPath, [fixture, compiledAuditLog, dir, session], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const counts = [...out.matchAll(/flushed (\d+)\n/g)].map((m) => Number(m[1]));
      const durable = counts[counts.length - 1] ?? 0;
      if (durable >= atLeast) resolve({ child, durable });
    });
    child.on('exit', (code, signal) => reject(new Error(`crash writer exited early (${code ?? signal}): ${err}`)));
  });
}

describe('audit log under SIGKILL', () => {
  it('keeps every flushed record, leaves only whole lines readable, and accepts appends after the crash', async () => {
    const dir = path.join(work, 'audit');
    const session = 'crash-1';
    const { child, durable } = await runUntilFlushed(dir, session, 200);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    expect(child.signalCode).toBe('SIGKILL');

    const afterCrash = await readAuditTailWithStats({ dir, limit: 100_000, session });
    expect(afterCrash.malformed).toBe(0);
    expect(afterCrash.torn).toBeLessThanOrEqual(1);
    expect(afterCrash.records.length).toBeGreaterThanOrEqual(durable);
    // What survived is exactly a prefix of what was appended: no gaps, no duplicates.
    const ids = afterCrash.records.map((r) => Number(r.call_id.slice(1))).sort((a, b) => a - b);
    expect(ids).toEqual(ids.map((_, i) => i));

    const log = createAuditLog({ dir, sessionId: session });
    log.append({ ts: new Date().toISOString(), session, call_id: 'after', tool: 'fs.read', args: {}, decision: 'allow', duration_ms: 0 });
    await log.close();
    const afterRestart = await readAuditTailWithStats({ dir, limit: 100_000, session });
    expect(afterRestart.malformed).toBe(0);
    expect(afterRestart.torn).toBe(0);
    expect(afterRestart.records.length).toBe(afterCrash.records.length + 1);
    expect(afterRestart.records.some((r) => r.call_id === 'after')).toBe(true);
  });
});
