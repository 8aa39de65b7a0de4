import { createHash } from 'node:crypto';
import { endianness, userInfo } from 'node:os';
import { KiwiError } from '../base/errors.js';
import { AF_UNIX, EACCES, ENOSYS, SOCK_FLAGS, SOCK_SEQPACKET, SOCK_STREAM } from './socket-constants.js';
import { sharedTempFile } from './shared-temp-file.js';

/**
 * A seccomp filter (classic BPF, as bwrap's `--seccomp FD` takes it) that keeps the tool from
 * getting a unix socket it could point at a host path: `socket(AF_UNIX, …)` fails with EACCES, a
 * datagram `socketpair` too, and io_uring does not exist (ENOSYS).
 *
 * Why a filter and not masks: `--ro-bind / /` leaves every host socket file in place, and connect()
 * ignores a read-only mount. Masking them means finding them: a scan misses a socket made after the
 * spawn (a restarted Postgres makes a new one at the old path, which a long-lived MCP server then
 * sees), one bound from another network namespace, or one in a folder nobody thought of (rootless
 * docker under a home, an agent's socket in a project); a tmpfs over /run also hides
 * /etc/resolv.conf's target. `--unshare-net` only parts abstract sockets, and not for a call that
 * keeps the network. Refusing the socket itself covers every path, abstract sockets with or without
 * the network, and sockets made later.
 *
 * The class to close is "a unix socket descriptor that may still connect or send to a path", not
 * the socket(2) call alone. Every way in to such a descriptor, and what stops it:
 * - socket(2), and socketcall(2)'s SYS_SOCKET on i386: refused for AF_UNIX (socketcall's domain
 *   lies in memory, out of a filter's reach, so its SYS_SOCKET is refused whatever the domain).
 * - io_uring (IORING_OP_SOCKET + IORING_OP_CONNECT, and any later opcode): the ring runs its
 *   requests in the kernel, past any system call filter. io_uring_setup, _enter and _register
 *   fail with ENOSYS, as on a kernel built without it, so libuv and others fall back to plain
 *   calls. Docker's and gVisor's defaults refuse it too; it has also been a rich source of kernel
 *   bugs.
 * - socketpair(2): a stream or seqpacket pair is connected for good (connect() again is EISCONN,
 *   even once the peer is closed), and pipes between a tool and its children need it; a datagram
 *   one may connect()/sendto() any path (the host's /dev/log, journald). So only SOCK_STREAM and
 *   SOCK_SEQPACKET are allowed, with SOCK_NONBLOCK/SOCK_CLOEXEC: an allow list, because AF_UNIX
 *   quietly turns SOCK_RAW into SOCK_DGRAM. On i386, socketcall's SYS_SOCKETPAIR (type in memory)
 *   is refused.
 * - A descriptor from elsewhere: the tool inherits none but its stdio (sandbox-argv.ts), which
 *   are connected stream sockets or pipes; SCM_RIGHTS needs a unix socket to arrive on; and
 *   pidfd_getfd(2) and ptrace need a process in the tool's own nested pid namespace, all of which
 *   run under this same filter (a seccomp filter is inherited and cannot be dropped), so they hold
 *   no socket this filter would refuse. pidfd_getfd stays allowed for that reason. open() of a
 *   socket file, or of /proc/PID/fd/N, fails with ENXIO.
 * What it costs: a tool cannot make a unix socket of its own, nor a datagram socketpair.
 *
 * Arguments are compared in their low 32 bits: the kernel reads domain and type as ints, so a
 * value with high bits set (0x1_00000001) must still read as AF_UNIX.
 * The filter reads the call's architecture first: a 64-bit process can still make 32-bit system
 * calls (`int 0x80` on x86-64), where the calls have other numbers and socketcall(2) another way in.
 */

/** socketcall(2)'s call numbers. */
const SYS_SOCKET = 1;
const SYS_SOCKETPAIR = 8;
/** io_uring_setup, io_uring_enter, io_uring_register: the same numbers on every ABI below (x32 adds its bit, masked off). */
const IO_URING = [425, 426, 427];
/** x32 system calls are x86-64's numbers with this bit set. */
const X32_BIT = 0x40000000;

interface Abi {
  /** AUDIT_ARCH_* */
  arch: number;
  socket: number;
  socketpair: number;
  /** socketcall(2), where the ABI has it. */
  socketcall?: number;
  /** Mask applied to the number first (x86-64 folds x32 into its own numbers). */
  mask?: number;
}

/** By Node's `process.arch`: the native ABI, then the compat one the kernel may also run. Little-endian only. */
const ABIS: Record<string, Abi[]> = {
  x64: [
    { arch: 0xc000003e, socket: 41, socketpair: 53, mask: ~X32_BIT >>> 0 },
    { arch: 0x40000003, socket: 359, socketpair: 360, socketcall: 102 },
  ],
  arm64: [
    { arch: 0xc00000b7, socket: 198, socketpair: 199 },
    { arch: 0x40000028, socket: 281, socketpair: 288 },
  ],
  riscv64: [{ arch: 0xc00000f3, socket: 198, socketpair: 199 }],
};

/** The filter's program for this machine, or undefined where it has no table (then host sockets stay reachable, and the sandbox says so). */
export function unixSocketFilter(arch: string = process.arch): Buffer | undefined {
  const abis = ABIS[arch];
  if (abis === undefined || endianness() !== 'LE') return undefined;
  const prog: Line[] = [ld(ARCH)];
  abis.forEach((abi, i) => prog.push(jeq(abi.arch, undefined, `after-abi${i}`), ...abiRules(abi, `abi${i}`), label(`after-abi${i}`)));
  // An architecture the kernel should never report for this machine's processes.
  prog.push(ret(RET_KILL_PROCESS), label(ALLOW), ret(RET_ALLOW), label(REFUSE), ret(RET_ERRNO | EACCES), label(ABSENT), ret(RET_ERRNO | ENOSYS));
  return assemble(prog);
}

/** One ABI's checks; each ends in a jump to ALLOW, REFUSE or ABSENT. */
function abiRules(abi: Abi, id: string): Line[] {
  const out: Line[] = [ld(NR)];
  if (abi.mask !== undefined) out.push(and(abi.mask));
  out.push(jeq(abi.socket, `${id}-socket`), jeq(abi.socketpair, `${id}-pair`));
  if (abi.socketcall !== undefined) out.push(jeq(abi.socketcall, `${id}-call`));
  out.push(...IO_URING.map((nr) => jeq(nr, ABSENT)), jump(ALLOW));
  out.push(label(`${id}-socket`), ld(argLow(0)), jeq(AF_UNIX, REFUSE, ALLOW));
  out.push(label(`${id}-pair`), ld(argLow(1)), and(~SOCK_FLAGS >>> 0), jeq(SOCK_STREAM, ALLOW), jeq(SOCK_SEQPACKET, ALLOW, REFUSE));
  if (abi.socketcall !== undefined) out.push(label(`${id}-call`), ld(argLow(0)), jeq(SYS_SOCKET, REFUSE), jeq(SYS_SOCKETPAIR, REFUSE, ALLOW));
  return out;
}

// A small assembler for classic BPF, with forward jumps to labels.

const LD_W_ABS = 0x20;
const AND_K = 0x54;
const JA = 0x05;
const JEQ_K = 0x15;
const RET_K = 0x06;
const RET_ALLOW = 0x7fff0000;
const RET_ERRNO = 0x00050000;
const RET_KILL_PROCESS = 0x80000000;
const ALLOW = 'allow';
const REFUSE = 'refuse';
const ABSENT = 'absent';
/** seccomp_data: nr at 0, arch at 4, args from 16, 8 bytes each (the low half first on a little-endian machine). */
const NR = 0;
const ARCH = 4;
const argLow = (i: number) => 16 + 8 * i;

/** An instruction whose jumps name labels (undefined: the next instruction), or a label. */
type Line = { code: number; k: number; jt?: string; jf?: string } | { label: string };

const ld = (offset: number): Line => ({ code: LD_W_ABS, k: offset });
const and = (mask: number): Line => ({ code: AND_K, k: mask });
const ret = (value: number): Line => ({ code: RET_K, k: value });
const jump = (to: string): Line => ({ code: JA, k: 0, jt: to });
const jeq = (value: number, then?: string, otherwise?: string): Line => ({ code: JEQ_K, k: value, ...(then ? { jt: then } : {}), ...(otherwise ? { jf: otherwise } : {}) });
const label = (name: string): Line => ({ label: name });

function assemble(lines: Line[]): Buffer {
  const at = new Map<string, number>();
  const insns: Array<Extract<Line, { code: number }>> = [];
  for (const line of lines) {
    if (!('label' in line)) insns.push(line);
    else if (at.has(line.label)) throw new KiwiError('INTERNAL', `seccomp filter: label ${line.label} defined twice`);
    else at.set(line.label, insns.length);
  }
  const out = Buffer.alloc(insns.length * 8);
  insns.forEach((insn, i) => {
    const offset = (name: string | undefined) => {
      if (name === undefined) return 0;
      const target = at.get(name);
      const by = target === undefined ? -1 : target - i - 1;
      if (by < 0 || (insn.code !== JA && by > 255)) throw new KiwiError('INTERNAL', `seccomp filter: no forward jump from instruction ${i} to ${name}`);
      return by;
    };
    // JA jumps by k; conditional jumps by their 8-bit jt/jf.
    const k = insn.code === JA ? offset(insn.jt) : insn.k;
    out.writeUInt16LE(insn.code, i * 8);
    out.writeUInt8(insn.code === JA ? 0 : offset(insn.jt), i * 8 + 2);
    out.writeUInt8(insn.code === JA ? 0 : offset(insn.jf), i * 8 + 3);
    out.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return out;
}

/** The filter written to a file bwrap can be handed as a descriptor, one per user and content. */
export function writeUnixSocketFilter(filter: Buffer): string {
  const digest = createHash('sha256').update(filter).digest('hex').slice(0, 16);
  return sharedTempFile(`kiwi-sandbox-unix-${userInfo().uid}-${digest}.bpf`, filter);
}
