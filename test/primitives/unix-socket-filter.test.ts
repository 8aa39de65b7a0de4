import { describe, expect, it } from 'vitest';
import { unixSocketFilter } from '../../src/primitives/unix-socket-filter.js';

/**
 * The filter's decisions, run through a classic BPF interpreter of the few instructions it uses,
 * on every ABI its table names (the sandbox tests run the real thing on this machine's only).
 */
type Verdict = 'allow' | 'kill' | `errno ${number}`;

function decide(prog: Buffer, arch: number, nr: number, args: number[] = []): Verdict {
  const data = Buffer.alloc(64);
  data.writeUInt32LE(nr >>> 0, 0);
  data.writeUInt32LE(arch >>> 0, 4);
  args.forEach((a, i) => data.writeBigUInt64LE(BigInt(a), 16 + 8 * i));
  let acc = 0;
  for (let pc = 0; pc < prog.length / 8; pc += 1) {
    const code = prog.readUInt16LE(pc * 8);
    const jt = prog.readUInt8(pc * 8 + 2);
    const jf = prog.readUInt8(pc * 8 + 3);
    const k = prog.readUInt32LE(pc * 8 + 4);
    if (code === 0x20) acc = data.readUInt32LE(k);
    else if (code === 0x54) acc = (acc & k) >>> 0;
    else if (code === 0x05) pc += k;
    else if (code === 0x15) pc += acc === k ? jt : jf;
    else if (code === 0x06) return k === 0x7fff0000 ? 'allow' : k === 0x80000000 ? 'kill' : k >>> 16 === 5 ? `errno ${k & 0xffff}` : (`ret ${k}` as Verdict);
    else throw new Error(`unexpected instruction ${code}`);
  }
  throw new Error('ran off the end of the filter');
}

const X86_64 = 0xc000003e;
const I386 = 0x40000003;
const X32 = 0x40000000;
const AARCH64 = 0xc00000b7;
const ARM = 0x40000028;
const RISCV64 = 0xc00000f3;
const [AF_UNIX, AF_INET, AF_NETLINK] = [1, 2, 16];
const [SOCK_STREAM, SOCK_DGRAM, SOCK_RAW, SOCK_SEQPACKET] = [1, 2, 3, 5];
const SOCK_NONBLOCK = 0x800;
const SOCK_CLOEXEC = 0x80000;
const EACCES = 'errno 13';
const ENOSYS = 'errno 38';

const abis = [
  { name: 'x86-64', machine: 'x64', arch: X86_64, socket: 41, socketpair: 53 },
  { name: 'x32', machine: 'x64', arch: X86_64, socket: X32 + 41, socketpair: X32 + 53 },
  { name: 'i386 on x86-64', machine: 'x64', arch: I386, socket: 359, socketpair: 360 },
  { name: 'arm64', machine: 'arm64', arch: AARCH64, socket: 198, socketpair: 199 },
  { name: 'arm on arm64', machine: 'arm64', arch: ARM, socket: 281, socketpair: 288 },
  { name: 'riscv64', machine: 'riscv64', arch: RISCV64, socket: 198, socketpair: 199 },
];

describe.each(abis)('the unix-socket filter on $name', ({ machine, arch, socket, socketpair }) => {
  const prog = unixSocketFilter(machine) as Buffer;
  const x32 = socket > X32 ? X32 : 0;

  it('refuses socket(AF_UNIX), also with high bits the kernel drops, and allows other domains', () => {
    expect(decide(prog, arch, socket, [AF_UNIX, SOCK_STREAM, 0])).toBe(EACCES);
    expect(decide(prog, arch, socket, [0x1_0000_0001, SOCK_DGRAM, 0])).toBe(EACCES);
    expect(decide(prog, arch, socket, [AF_INET, SOCK_STREAM, 0])).toBe('allow');
    expect(decide(prog, arch, socket, [AF_NETLINK, SOCK_RAW, 0])).toBe('allow');
  });

  it('refuses io_uring with ENOSYS, as a kernel without it', () => {
    for (const nr of [425, 426, 427]) expect(decide(prog, arch, x32 + nr)).toBe(ENOSYS);
  });

  it('allows stream and seqpacket socketpairs, with their flags, and nothing else', () => {
    expect(decide(prog, arch, socketpair, [AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK])).toBe('allow');
    expect(decide(prog, arch, socketpair, [AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC])).toBe('allow');
    expect(decide(prog, arch, socketpair, [AF_UNIX, SOCK_DGRAM])).toBe(EACCES);
    expect(decide(prog, arch, socketpair, [AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC])).toBe(EACCES);
    // AF_UNIX makes a datagram socket of SOCK_RAW.
    expect(decide(prog, arch, socketpair, [AF_UNIX, SOCK_RAW])).toBe(EACCES);
    // A stray bit makes the kernel refuse the call (EINVAL); the filter does not guess.
    expect(decide(prog, arch, socketpair, [AF_UNIX, SOCK_STREAM | 0x100])).toBe(EACCES);
    // High bits the kernel drops do not matter.
    expect(decide(prog, arch, socketpair, [AF_UNIX, 0x1_0000_0001])).toBe('allow');
  });

  it('allows the rest', () => {
    expect(decide(prog, arch, x32 + 0)).toBe('allow');
    // pidfd_getfd: only processes under this same filter are in reach (the file header says why).
    expect(decide(prog, arch, x32 + 438)).toBe('allow');
  });
});

describe('the unix-socket filter on i386 socketcall(2)', () => {
  const prog = unixSocketFilter('x64') as Buffer;
  it('refuses SYS_SOCKET and SYS_SOCKETPAIR, whose arguments lie in memory, and allows the other calls', () => {
    expect(decide(prog, I386, 102, [1])).toBe(EACCES);
    expect(decide(prog, I386, 102, [8])).toBe(EACCES);
    expect(decide(prog, I386, 102, [3])).toBe('allow');
    // x86-64 has no socketcall: its 102 is getuid.
    expect(decide(prog, X86_64, 102, [1])).toBe('allow');
  });

  it('kills a call from an architecture the table does not expect', () => {
    expect(decide(prog, AARCH64, 41, [AF_UNIX])).toBe('kill');
    expect(unixSocketFilter('s390x')).toBeUndefined();
  });
});
