import { createHash } from 'node:crypto';
import { endianness, userInfo } from 'node:os';
import { sharedTempFile } from './shared-temp-file.js';

/**
 * A seccomp filter (classic BPF, as bwrap's `--seccomp FD` takes it) that makes `socket(AF_UNIX, …)`
 * fail with EACCES inside the sandbox.
 *
 * Why a filter and not masks: `--ro-bind / /` leaves every host socket file in place, and connect()
 * ignores a read-only mount. Masking them means finding them: a scan misses a socket made after the
 * spawn (a restarted Postgres makes a new one at the old path, which a long-lived MCP server then
 * sees), one bound from another network namespace, or one in a folder nobody thought of (rootless
 * docker under a home, an agent's socket in a project); a tmpfs over /run also hides
 * /etc/resolv.conf's target. `--unshare-net` only parts abstract sockets, and not for a call that
 * keeps the network. Refusing the socket itself covers every path, abstract sockets with or without
 * the network, and sockets made later. What it costs: a tool cannot make a unix socket of its own
 * (socketpair(2), which pipes between a tool and its children use, stays allowed).
 *
 * The filter reads the call's architecture first: a 64-bit process can still make 32-bit system
 * calls (`int 0x80` on x86-64), where socket has another number and socketcall(2) another way in.
 */

const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const AND_K = 0x54;
const RET_K = 0x06;
const RET_ALLOW = 0x7fff0000;
const RET_KILL_PROCESS = 0x80000000;
const EACCES = 13;
const RET_EACCES = 0x00050000 | EACCES;
/** socket(2)'s domain; socketcall(2)'s SYS_SOCKET is 1 too, so one comparison serves both (socketcall's own domain is out of reach, in memory). */
const AF_UNIX = 1;
/** seccomp_data: nr at 0, arch at 4, args[0] at 16 (its low half first on a little-endian machine). */
const NR = 0;
const ARCH = 4;
const ARG0_LOW = 16;
/** x32 system calls are x86-64's numbers with this bit set. */
const X32_BIT = 0x40000000;

interface ArchCalls {
  /** AUDIT_ARCH_* */
  arch: number;
  /** Numbers of socket(2), and of socketcall(2) where the ABI has it. */
  calls: number[];
  /** Mask applied to the number first (x86-64 folds x32 into its own numbers). */
  mask?: number;
}

/** By Node's `process.arch`: the native ABI, then the compat one the kernel may also run. Little-endian only. */
const ARCHES: Record<string, ArchCalls[]> = {
  x64: [
    { arch: 0xc000003e, calls: [41], mask: ~X32_BIT >>> 0 },
    { arch: 0x40000003, calls: [359, 102] },
  ],
  arm64: [
    { arch: 0xc00000b7, calls: [198] },
    { arch: 0x40000028, calls: [281] },
  ],
  riscv64: [{ arch: 0xc00000f3, calls: [198] }],
};

type Insn = [code: number, jt: number, jf: number, k: number];

/** The filter's program for this machine, or undefined where it has no table (then host sockets stay reachable, and the sandbox says so). */
export function unixSocketFilter(arch: string = process.arch): Buffer | undefined {
  const table = ARCHES[arch];
  if (table === undefined || endianness() !== 'LE') return undefined;
  const prog: Insn[] = [[LD_W_ABS, 0, 0, ARCH]];
  for (const { arch: id, calls, mask } of table) {
    const block: Insn[] = [[LD_W_ABS, 0, 0, NR]];
    if (mask !== undefined) block.push([AND_K, 0, 0, mask]);
    // Each match jumps over the remaining matches and the allow, to the argument check.
    calls.forEach((nr, i) => block.push([JEQ_K, calls.length - i, 0, nr]));
    block.push([RET_K, 0, 0, RET_ALLOW]);
    block.push([LD_W_ABS, 0, 0, ARG0_LOW], [JEQ_K, 0, 1, AF_UNIX], [RET_K, 0, 0, RET_EACCES], [RET_K, 0, 0, RET_ALLOW]);
    prog.push([JEQ_K, 0, block.length, id], ...block);
  }
  // An architecture the kernel should never report for this machine's processes.
  prog.push([RET_K, 0, 0, RET_KILL_PROCESS]);
  const out = Buffer.alloc(prog.length * 8);
  prog.forEach(([code, jt, jf, k], i) => {
    out.writeUInt16LE(code, i * 8);
    out.writeUInt8(jt, i * 8 + 2);
    out.writeUInt8(jf, i * 8 + 3);
    out.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return out;
}

/** The filter written to a file bwrap can be handed as a descriptor, one per user and content. */
export function writeUnixSocketFilter(filter: Buffer): string {
  const digest = createHash('sha256').update(filter).digest('hex').slice(0, 16);
  return sharedTempFile(`kiwi-sandbox-unix-${userInfo().uid}-${digest}.bpf`, filter);
}
