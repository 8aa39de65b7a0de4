import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { blocksWithout, containerSeccompProfile, readPodmanProfile, type SeccompProfile } from '../../src/primitives/container-seccomp.js';

/** A base shaped as podman's: an unconditional allow list that names the calls, and socket rules conditional on a capability. */
const base: SeccompProfile = {
  defaultAction: 'SCMP_ACT_ERRNO',
  defaultErrnoRet: 38,
  archMap: [{ architecture: 'SCMP_ARCH_X86_64', subArchitectures: ['SCMP_ARCH_X86', 'SCMP_ARCH_X32'] }],
  syscalls: [
    { names: ['read', 'socket', 'socketpair', 'socketcall', 'connect', 'io_uring_setup'], action: 'SCMP_ACT_ALLOW', args: [] },
    { names: ['socket'], action: 'SCMP_ACT_ALLOW', args: [{ index: 0, value: 16, valueTwo: 0, op: 'SCMP_CMP_NE' }], excludes: { caps: ['CAP_AUDIT_WRITE'] } },
    { names: ['socket'], action: 'SCMP_ACT_ALLOW', args: null, includes: { caps: ['CAP_AUDIT_WRITE'] } },
    { names: ['personality'], action: 'SCMP_ACT_ALLOW', args: [{ index: 0, value: 8, valueTwo: 0, op: 'SCMP_CMP_EQ' }] },
  ],
};

type Rule = SeccompProfile['syscalls'][number];

/** What the profile does with a call whose first conditioned argument is `value`, as libseccomp matches MASKED_EQ (value: the mask, valueTwo: the datum). */
function actions(profile: SeccompProfile, name: string, index: number, value: bigint): string[] {
  return profile.syscalls
    .filter((r: Rule) => (r.names ?? []).includes(name))
    .filter((r: Rule) => (r.args ?? []).every((a) => a.index !== index || (a.op === 'SCMP_CMP_MASKED_EQ' && (value & BigInt(a.value)) === BigInt(a.valueTwo ?? 0))))
    .map((r: Rule) => (r.action === 'SCMP_ACT_ERRNO' ? `errno ${String(r['errnoRet'])}` : r.action));
}

describe('the container seccomp profile', () => {
  const profile = containerSeccompProfile(base, 'x64') as SeccompProfile;

  it("takes socket, socketpair, socketcall and io_uring out of every base rule, keeping the rest as podman wrote it", () => {
    expect(profile.syscalls[0]).toEqual({ names: ['read', 'connect'], action: 'SCMP_ACT_ALLOW', args: [] });
    expect(profile.syscalls[1]).toEqual(base.syscalls[3]);
    // No rule names one of them without conditions but io_uring's refusal: such a rule would allow every call.
    for (const rule of profile.syscalls) {
      if ((rule.names ?? []).some((n) => ['socket', 'socketpair'].includes(n))) expect(rule.args?.length).toBeGreaterThan(0);
      expect(rule.names).not.toContain('socketcall');
    }
    expect(profile.defaultAction).toBe('SCMP_ACT_ERRNO');
  });

  it('refuses socket(AF_UNIX), also in the low half of a 64-bit domain, and allows every other domain by exactly one rule', () => {
    expect(actions(profile, 'socket', 0, 1n)).toEqual(['errno 13']);
    expect(actions(profile, 'socket', 0, 0x1_0000_0001n)).toEqual(['errno 13']);
    for (const domain of [0n, 2n, 3n, 10n, 16n, 17n, 38n, 40n, 0xffffn, 0x8000_0001n, 0xffff_ffffn, 0x1_0000_0002n]) expect(actions(profile, 'socket', 0, domain)).toEqual(['SCMP_ACT_ALLOW']);
    // Each rule's two conditions are on different arguments: runc would split two on one argument into rules that either allows.
    for (const rule of profile.syscalls) expect(new Set((rule.args ?? []).map((a) => a.index)).size).toBe((rule.args ?? []).length);
  });

  it('allows stream and seqpacket socketpairs with their flags, and refuses datagram and raw ones', () => {
    expect(actions(profile, 'socketpair', 1, 1n | 0x80000n | 0x800n)).toEqual(['SCMP_ACT_ALLOW']);
    expect(actions(profile, 'socketpair', 1, 5n)).toEqual(['SCMP_ACT_ALLOW']);
    expect(actions(profile, 'socketpair', 1, 2n | 0x80000n)).toEqual(['errno 13']);
    expect(actions(profile, 'socketpair', 1, 3n)).toEqual(['errno 13']);
    // Anything else meets the profile's default (the kernel would refuse it with EINVAL).
    expect(actions(profile, 'socketpair', 1, 1n | 0x100n)).toEqual([]);
  });

  it('refuses io_uring with ENOSYS, and leaves 32-bit x86 (socketcall) out', () => {
    for (const name of ['io_uring_setup', 'io_uring_enter', 'io_uring_register']) expect(actions(profile, name, 0, 0n)).toEqual(['errno 38']);
    expect(profile['archMap']).toEqual([{ architecture: 'SCMP_ARCH_X86_64', subArchitectures: ['SCMP_ARCH_X32'] }]);
    expect(containerSeccompProfile(base, 's390x')).toBeUndefined();
  });

  it('writes "every value but one" as disjoint aligned blocks', () => {
    const blocks = blocksWithout(1);
    expect(blocks).toHaveLength(32);
    for (const v of [0, 1, 2, 3, 255, 0x7fffffff, 0x80000000, 0xffffffff]) {
      expect(blocks.filter(({ mask, value }) => ((v & mask) >>> 0) === value)).toHaveLength(v === 1 ? 0 : 1);
    }
  });
});

describe("reading podman's profile", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'kiwi-seccomp-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('takes the first that exists, the override before the default', () => {
    writeFileSync(join(dir, 'default.json'), JSON.stringify(base));
    expect(readPodmanProfile([join(dir, 'etc.json'), join(dir, 'default.json')])).toEqual({ ok: true, profile: base });
  });

  it('says why when there is none, or it does not parse', () => {
    expect(readPodmanProfile([join(dir, 'a.json')])).toEqual({ ok: false, reason: expect.stringMatching(/not at .*a\.json, so .*install containers-common$/u) });
    writeFileSync(join(dir, 'bad.json'), '{"syscalls": 3}');
    expect(readPodmanProfile([join(dir, 'bad.json')])).toEqual({ ok: false, reason: expect.stringMatching(/bad\.json could not be read/u) });
  });
});
