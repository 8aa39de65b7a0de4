import { describe, expect, it } from 'vitest';
import { DEFAULT_CONTAINER_LIMITS } from '../../src/policy/isolation-choice.js';
import { containerArgv, type ContainerHost, type ContainerSpec } from '../../src/primitives/container-argv.js';

const host: ContainerHost = { podman: '/usr/bin/podman', runtime: '/usr/sbin/runc', image: 'localhost/kiwi-base:1', systemMounts: [{ path: '/usr', writable: false }] };
const spec: ContainerSpec = {
  name: 'kiwi-0123456789abcdef',
  argv: ['python3', 'tool.py', '--flag; rm -rf /'],
  cwd: '/p',
  envNames: ['PATH', 'API_KEY'],
  childPath: '/usr/bin',
  network: false,
  limits: { ...DEFAULT_CONTAINER_LIMITS, cpus: 0.5, memoryMb: 128 },
  tmpMb: 8,
  mounts: [{ path: '/p', writable: false }, { path: '/p/out', writable: true }],
  masks: [{ path: '/p/.env', dir: false }, { path: '/p/.ai/state', dir: true }],
  emptyFile: '/tmp/empty',
  user: '1000:1000',
  timeoutSeconds: 35,
};

/** The value after each occurrence of a flag. */
const values = (argv: string[], flag: string) => argv.flatMap((a, i) => (a === flag ? [argv[i + 1]] : []));

describe('containerArgv', () => {
  const argv = containerArgv(host, spec);

  it('runs the image with runc, never pulling, removed on exit, under its name', () => {
    expect(argv.slice(0, 9)).toEqual(['/usr/bin/podman', 'run', '--rm', '--interactive', '--pull=never', '--name', 'kiwi-0123456789abcdef', '--runtime', '/usr/sbin/runc']);
  });

  it('sets every limit explicitly, and no network', () => {
    expect(values(argv, '--network')).toEqual(['none']);
    expect(values(argv, '--ulimit')).toEqual(['nofile=1024:1024', 'nproc=256:256']);
    expect(values(argv, '--pids-limit')).toEqual(['256']);
    expect(values(argv, '--cpus')).toEqual(['0.5']);
    expect(values(argv, '--memory')).toEqual(['128m']);
    expect(values(argv, '--memory-swap')).toEqual(['128m']);
    expect(values(argv, '--timeout')).toEqual(['35']);
    expect(argv).toContain('--read-only');
    expect(values(argv, '--cap-drop')).toEqual(['all']);
    expect(values(argv, '--user')).toEqual(['1000:1000']);
  });

  it('mounts /usr and the grants as granted, and masks over them', () => {
    expect(values(argv, '--volume')).toEqual(['/usr:/usr:ro', '/p:/p:ro', '/p/out:/p/out:rw', '/tmp/empty:/p/.env:ro']);
    expect(values(argv, '--tmpfs')).toEqual(['/tmp:rw,nosuid,nodev,size=8m,mode=1777', '/p/.ai/state:ro,size=4k,notmpcopyup']);
  });

  it('passes variables by name only, PATH by value, and the tool argv unchanged after the image', () => {
    expect(values(argv, '--env')).toEqual(['PATH=/usr/bin', 'API_KEY']);
    expect(argv.slice(-4)).toEqual(['localhost/kiwi-base:1', 'python3', 'tool.py', '--flag; rm -rf /']);
  });

  it('mounts a grant of /tmp itself instead of the private /tmp, and /usr only once', () => {
    const argv = containerArgv(host, { ...spec, cwd: '/tmp', mounts: [{ path: '/tmp', writable: false }, { path: '/usr', writable: true }], masks: [] });
    expect(values(argv, '--volume')).toEqual(['/usr:/usr:ro', '/tmp:/tmp:ro']);
    expect(values(argv, '--tmpfs')).toEqual([]);
  });

  it("applies the host's seccomp profile, and podman's default where there is none", () => {
    expect(values(argv, '--security-opt')).toEqual(['no-new-privileges']);
    const withProfile = containerArgv({ ...host, seccompProfile: '/tmp/kiwi-container-seccomp-0-x.json' }, spec);
    expect(values(withProfile, '--security-opt')).toEqual(['no-new-privileges', 'seccomp=/tmp/kiwi-container-seccomp-0-x.json']);
  });

  it('gives the network only when granted', () => {
    expect(values(containerArgv(host, { ...spec, network: true }), '--network')).toEqual(['bridge']);
  });

  it('refuses a path podman would split', () => {
    expect(() => containerArgv(host, { ...spec, mounts: [{ path: '/p/a:b', writable: false }] })).toThrow(/cannot mount "\/p\/a:b" into a container: podman needs an absolute path without ':' or ','/u);
    expect(() => containerArgv(host, { ...spec, masks: [{ path: '/p/x,ro', dir: true }] })).toThrow(/without ':' or ','/u);
    expect(() => containerArgv(host, { ...spec, cwd: 'relative' })).toThrow(/absolute path/u);
  });
});
