import { execFile } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { KIWI_VERSION } from '../base/version.js';
import type { ContainerMount } from './container-argv.js';

/**
 * The image `sandboxed` and `restricted` tools run in, built here from nothing downloaded: a root
 * filesystem of empty mount points (`/usr`, `/tmp`, `/proc`…), the host's `/bin`→`usr/bin` style
 * links, and an `/etc/passwd` and `/etc/group` that name root and nobody. The host's `/usr` (and
 * any of `/bin`, `/lib`… that is a real folder rather than a link into it) is mounted read-only
 * on every run.
 *
 * Why mount /usr rather than copy the runtimes and what `ldd` names: python and node load far more
 * than their libraries (the standard library, native modules, locale and timezone data), so a
 * copied set breaks whenever a tool imports something new, and it goes stale with every host
 * upgrade. /usr holds programs and their data, no user's files or secrets (those live in /etc,
 * /home, /root, /var, which the container does not get), and it is what the bubblewrap sandbox
 * shows tools too. The image stays a few kilobytes and builds in well under a second.
 */

export const CONTAINER_IMAGE = `localhost/kiwi-base:${KIWI_VERSION}`;

/** Top-level folders that hold programs and libraries: a link into /usr is copied into the image, a real folder mounted. */
const SYSTEM_TOP = ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32'];
const MOUNT_POINTS = ['usr', 'etc', 'tmp', 'proc', 'sys', 'dev', 'run', 'var/tmp'];
const PASSWD = 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n';
const GROUP = 'root:x:0:\nnogroup:x:65534:\n';
const BUILD_TIMEOUT_MS = 120_000;

/** How this host lays out its programs: the links to copy into the image and the folders to mount. */
export function hostLayout(root = '/'): { links: Array<[string, string]>; mounts: ContainerMount[] } {
  const links: Array<[string, string]> = [];
  const mounts: ContainerMount[] = [{ path: path.join(root, 'usr'), writable: false }];
  for (const name of SYSTEM_TOP) {
    const full = path.join(root, name);
    let st;
    try {
      st = lstatSync(full);
    } catch {
      continue;
    }
    if (st.isSymbolicLink()) links.push([name, readlinkSync(full)]);
    else if (st.isDirectory()) mounts.push({ path: full, writable: false });
  }
  return { links, mounts };
}

/** Builds the image under `tag` with `podman import`, replacing an older one of that tag. Rejects with podman's or tar's own message. */
export async function buildContainerImage(podman: string, tag = CONTAINER_IMAGE, signal?: AbortSignal): Promise<void> {
  const work = mkdtempSync(path.join(tmpdir(), 'kiwi-image-'));
  try {
    const rootfs = path.join(work, 'rootfs');
    for (const dir of MOUNT_POINTS) mkdirSync(path.join(rootfs, dir), { recursive: true });
    const layout = hostLayout();
    for (const [name, target] of layout.links) symlinkSync(target, path.join(rootfs, name));
    for (const mount of layout.mounts) mkdirSync(path.join(rootfs, mount.path), { recursive: true });
    writeFileSync(path.join(rootfs, 'etc', 'passwd'), PASSWD);
    writeFileSync(path.join(rootfs, 'etc', 'group'), GROUP);
    const tarball = path.join(work, 'rootfs.tar');
    await run('tar', ['--numeric-owner', '--owner=0', '--group=0', '-C', rootfs, '-cf', tarball, '.'], signal);
    const before = await run(podman, ['image', 'inspect', '--format', '{{.Id}}', tag]).then((out) => out.trim(), () => '');
    const after = (await run(podman, ['import', '--quiet', '--message', `kiwi ${KIWI_VERSION} base: mount points for the host's /usr`, tarball, tag], signal)).trim();
    // The image this tag named before is left without a name: removed, unless a running container still uses it.
    if (before !== '' && !after.endsWith(before)) await run(podman, ['rmi', before]).catch(() => undefined);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Whether podman has the image already (`podman image exists` answers by its exit code). */
export function imageExists(podman: string, tag = CONTAINER_IMAGE): Promise<boolean> {
  return run(podman, ['image', 'exists', tag]).then(() => true, () => false);
}

function run(file: string, args: string[], signal?: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: BUILD_TIMEOUT_MS, ...(signal ? { signal } : {}) }, (error, stdout, stderr) => {
      if (error === null) return resolve(stdout);
      const first = stderr.trim().split('\n').at(-1) ?? '';
      reject(new Error(`${path.basename(file)} ${args[0] ?? ''} failed: ${first || error.message}`));
    });
  });
}
