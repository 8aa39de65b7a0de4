/**
 * The Linux constants the unix-socket rules compare, the same on every architecture the sandbox's
 * filter (unix-socket-filter.ts) and the containers' profile (container-seccomp.ts) know.
 */
export const EACCES = 13;
export const ENOSYS = 38;
export const AF_UNIX = 1;
export const SOCK_STREAM = 1;
export const SOCK_DGRAM = 2;
export const SOCK_RAW = 3;
export const SOCK_SEQPACKET = 5;
/** SOCK_NONBLOCK | SOCK_CLOEXEC (O_NONBLOCK, O_CLOEXEC); any other bit is a type the allow list must see. */
export const SOCK_FLAGS = 0x800 | 0x80000;
