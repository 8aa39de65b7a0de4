import { describe, expect, it } from 'vitest';
import { runCli } from '../../../src/app/run-cli.js';
import { createContainerRunner } from '../../../src/primitives/container.js';
import { CONTAINER_IMAGE } from '../../../src/primitives/container-image.js';

const probe = await createContainerRunner({ warn: () => undefined }).availability();
if (!probe.ok && process.env.KIWI_REQUIRE_CONTAINERS === '1') throw new Error(`KIWI_REQUIRE_CONTAINERS=1 but containers do not run here: ${probe.reason}`);

async function kiwi(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { env: { PATH: process.env.PATH }, cwd: process.cwd(), io: { out: (l) => out.push(l), err: (l) => err.push(l) } });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('kiwi containers', () => {
  it('says how to use it when the action is missing or unknown', async () => {
    expect(await kiwi('containers')).toEqual({ code: 2, out: '', err: 'kiwi containers: usage: kiwi containers build|check' });
    expect((await kiwi('containers', 'pull')).code).toBe(2);
  });

  it.runIf(probe.ok)('builds the image from local files, and then finds that containers run', async () => {
    const built = await kiwi('containers', 'build');
    expect(built).toEqual({ code: 0, out: `building ${CONTAINER_IMAGE} from this machine's own files (nothing is downloaded)…\nbuilt ${CONTAINER_IMAGE}`, err: '' });
    const checked = await kiwi('containers', 'check');
    expect(checked.code).toBe(0);
    expect(checked.out).toMatch(new RegExp(`^containers run here: \\S+podman with \\S+runc, image ${CONTAINER_IMAGE.replace(/[.]/gu, '\\.')}$`, 'u'));
  });
});
