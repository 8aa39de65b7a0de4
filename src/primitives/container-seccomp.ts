import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { z } from 'zod';
import { sharedTempFile } from './shared-temp-file.js';
import { AF_UNIX, EACCES, ENOSYS, SOCK_DGRAM, SOCK_FLAGS, SOCK_RAW, SOCK_SEQPACKET, SOCK_STREAM } from './socket-constants.js';

/**
 * The seccomp profile a container tool runs under (`podman run --security-opt seccomp=FILE`):
 * podman's own default profile, with the rules of the sandbox's filter (unix-socket-filter.ts, whose
 * header says why each one) in place of its rules for these calls:
 * - `socket` for every domain but AF_UNIX, which fails with EACCES;
 * - `socketpair` for SOCK_STREAM and SOCK_SEQPACKET (with SOCK_NONBLOCK/SOCK_CLOEXEC) only: a
 *   SOCK_DGRAM pair, or SOCK_RAW which AF_UNIX turns into one, fails with EACCES;
 * - `io_uring_setup`, `_enter`, `_register` fail with ENOSYS (podman's default of 2022 leaves them
 *   out already; a later or local one may not);
 * - `socketcall` is left out (the profile's default: ENOSYS), and so is 32-bit x86: socketcall's
 *   arguments lie in memory, and libseccomp turns a conditional `socket` rule into an unconditional
 *   socketcall(SYS_SOCKET) one on that ABI. A 32-bit x86 program does not run in a container.
 *
 * How the rules are written, as libseccomp and runc read them: a call named in a rule without
 * conditions is allowed whatever other rules say, so these calls are taken out of every rule of the
 * base (podman's `socket` rules, conditional on CAP_AUDIT_WRITE, allow AF_UNIX; a tool has no
 * capability, and the kernel refuses its audit messages itself). Conditions compare all 64 bits,
 * while the kernel reads domain and type as ints, so each compares the low 32 bits through
 * SCMP_CMP_MASKED_EQ (`value` the mask, `valueTwo` the datum). runc splits two conditions on one
 * argument into two rules that either allows, so "domain ≠ AF_UNIX" is written as the aligned
 * blocks of 32-bit values that leave AF_UNIX out, one rule each.
 *
 * Why podman's profile and not one of our own: it is the one podman already runs every container
 * under, kept by the distribution in step with its podman and libseccomp. Where it is not on disk
 * (podman falls back to a copy built into its binary, which cannot be read), containers are refused
 * rather than run without these rules.
 */

/** Where podman looks for its default profile: the override first (containers/common). */
export const PODMAN_SECCOMP_PROFILES = ['/etc/containers/seccomp.json', '/usr/share/containers/seccomp.json'];
/** The base's own cap on size: podman's is ~16 KB. */
const MAX_PROFILE_BYTES = 1024 * 1024;

const LOW_32 = 0xffffffff;
const OURS = new Set(['socket', 'socketpair', 'socketcall', 'io_uring_setup', 'io_uring_enter', 'io_uring_register']);

/** By Node's `process.arch`: the native ABI and the compat ones the profile keeps (as in unix-socket-filter.ts). */
const ARCHES: Record<string, { architecture: string; subArchitectures: string[] }> = {
  x64: { architecture: 'SCMP_ARCH_X86_64', subArchitectures: ['SCMP_ARCH_X32'] },
  arm64: { architecture: 'SCMP_ARCH_AARCH64', subArchitectures: ['SCMP_ARCH_ARM'] },
  riscv64: { architecture: 'SCMP_ARCH_RISCV64', subArchitectures: [] },
};

const argSchema = z.object({ index: z.number().int(), value: z.number(), valueTwo: z.number().optional(), op: z.string() });
const ruleSchema = z.looseObject({ names: z.array(z.string()).optional(), name: z.string().optional(), action: z.string(), args: z.array(argSchema).nullish() });
const profileSchema = z.looseObject({ defaultAction: z.string(), syscalls: z.array(ruleSchema) });

export type SeccompProfile = z.infer<typeof profileSchema>;
type Rule = z.infer<typeof ruleSchema>;
type Arg = z.infer<typeof argSchema>;

/** Podman's default profile, from the first of `paths` that exists; a reason when none does or it does not parse. */
export function readPodmanProfile(paths: readonly string[] = PODMAN_SECCOMP_PROFILES): { ok: true; profile: SeccompProfile } | { ok: false; reason: string } {
  for (const file of paths) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    if (text.length > MAX_PROFILE_BYTES) return { ok: false, reason: `podman's seccomp profile ${file} is over ${MAX_PROFILE_BYTES} bytes` };
    try {
      return { ok: true, profile: profileSchema.parse(JSON.parse(text)) };
    } catch (error) {
      return { ok: false, reason: `podman's seccomp profile ${file} could not be read (${(error as Error).message.split('\n')[0]})` };
    }
  }
  return { ok: false, reason: `podman's default seccomp profile is not at ${paths.join(' or ')}, so the container's rules for unix sockets cannot be added to it; install containers-common` };
}

/** The container profile for this machine, or undefined where it has no table of architectures. */
export function containerSeccompProfile(base: SeccompProfile, arch: string = process.arch): SeccompProfile | undefined {
  const archMap = ARCHES[arch];
  if (archMap === undefined) return undefined;
  const kept = base.syscalls.flatMap((rule): Rule[] => {
    const names = (rule.names ?? (rule.name ? [rule.name] : [])).filter((n) => !OURS.has(n));
    const { name: _single, ...rest } = rule;
    return names.length === 0 ? [] : [{ ...rest, names }];
  });
  return { ...base, archMap: [archMap], syscalls: [...kept, ...socketRules()] };
}

function socketRules(): Rule[] {
  const errno = (names: string[], code: number, args: Arg[] = []): Rule => ({ names, action: 'SCMP_ACT_ERRNO', errnoRet: code, args });
  const allow = (names: string[], args: Arg[]): Rule => ({ names, action: 'SCMP_ACT_ALLOW', args });
  const type = (t: number) => [masked(1, ~SOCK_FLAGS >>> 0, t)];
  return [
    errno(['socket'], EACCES, [masked(0, LOW_32, AF_UNIX)]),
    ...blocksWithout(AF_UNIX).map(({ mask, value }) => allow(['socket'], [masked(0, mask, value)])),
    allow(['socketpair'], type(SOCK_STREAM)),
    allow(['socketpair'], type(SOCK_SEQPACKET)),
    errno(['socketpair'], EACCES, type(SOCK_DGRAM)),
    errno(['socketpair'], EACCES, type(SOCK_RAW)),
    errno(['io_uring_setup', 'io_uring_enter', 'io_uring_register'], ENOSYS),
  ];
}

const masked = (index: number, mask: number, value: number): Arg => ({ index, value: mask, valueTwo: value, op: 'SCMP_CMP_MASKED_EQ' });

/**
 * Every 32-bit value but `refused`, as aligned blocks (value, mask): for each bit from the top,
 * the half that does not hold `refused` is one block, and the search goes on in the half that does.
 */
export function blocksWithout(refused: number): Array<{ mask: number; value: number }> {
  const out: Array<{ mask: number; value: number }> = [];
  for (let bit = 31; bit >= 0; bit -= 1) {
    const mask = (LOW_32 << bit) >>> 0;
    // The block that shares `refused`'s bits above `bit` and differs at `bit`.
    out.push({ mask, value: ((refused ^ (1 << bit)) & mask) >>> 0 });
  }
  return out;
}

/** The profile written once per user and content, for podman to read. */
export function writeContainerSeccompProfile(profile: SeccompProfile): string {
  const text = `${JSON.stringify(profile, null, 1)}\n`;
  const digest = createHash('sha256').update(text).digest('hex').slice(0, 16);
  return sharedTempFile(`kiwi-container-seccomp-${userInfo().uid}-${digest}.json`, text);
}
