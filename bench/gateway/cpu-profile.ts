import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import path from 'node:path';

/**
 * `--cpu-profile FILE`: a V8 CPU profile of the gateway's process while one phase runs (open
 * it in Chrome DevTools or speedscope), and a short summary of where the CPU time went: self
 * time by function and by source file, per request.
 */

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface CpuProfiler {
  stop(file: string, requests: number): Promise<string[]>;
}

export async function startCpuProfile(): Promise<CpuProfiler> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
  return {
    async stop(file, requests) {
      try {
        const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: Profile };
        await writeFile(file, JSON.stringify(profile));
        return summarize(profile, requests);
      } finally {
        session.disconnect();
      }
    },
  };
}

const REPO = path.resolve(new URL('../../', import.meta.url).pathname);

function place(url: string): string {
  if (url === '') return '(native)';
  const p = url.startsWith('file://') ? new URL(url).pathname : url;
  const nm = p.lastIndexOf('/node_modules/');
  if (nm >= 0) return `${p.slice(nm + 14).split('/').slice(0, p.slice(nm + 14).startsWith('@') ? 2 : 1).join('/')} (package)`;
  return p.startsWith(REPO) ? path.relative(REPO, p) : p;
}

function summarize(profile: Profile, requests: number): string[] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  let busy = 0;
  let all = 0;
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)?.callFrame;
    if (frame === undefined) continue;
    all += us;
    if (frame.functionName === '(idle)') continue;
    busy += us;
    const where = place(frame.url);
    // tsx-compiled files report generated line numbers, which mean nothing in the source.
    const line = frame.url === '' || frame.url.endsWith('.ts') ? '' : `:${frame.lineNumber + 1}`;
    const fn = `${frame.functionName || '(anonymous)'} ${where}${line}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
    const file = frame.url === '' ? `(native) ${frame.functionName}` : where;
    byFile.set(file, (byFile.get(file) ?? 0) + us);
  }
  const perRequest = (us: number) => `${(us / 1000 / Math.max(1, requests)).toFixed(3).padStart(7)} ms/req ${((100 * us) / Math.max(1, busy)).toFixed(1).padStart(5)}%`;
  const top = (m: Map<string, number>, n: number) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, us]) => `  ${perRequest(us)}  ${k}`);
  return [
    `gateway process CPU during the phase: ${(busy / 1000).toFixed(0)} ms busy of ${(all / 1000).toFixed(0)} ms, ${(busy / 1000 / Math.max(1, requests)).toFixed(3)} ms per gateway request (${requests})`,
    'self time by file (natives by name):',
    ...top(byFile, 18),
    'self time by function:',
    ...top(byFunction, 18),
  ];
}
