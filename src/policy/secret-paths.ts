/**
 * Places that hold secrets or the gateway's own records, denied to every tool — ours and external
 * MCP tools alike — even where `filesystem.read`/`write` would allow them, unless every policy in
 * the chain names them in `filesystem.allow_secret_paths`. `**` already skips dot-files, but a
 * policy that grants `.ai/**` or a dotted glob must not hand out keys, git credentials or the audit
 * log (which names sessions and clients) by accident.
 */
import picomatch from 'picomatch';

const SECRET_GLOBS: readonly [glob: string, what: string][] = [
  ['**/.env*', 'an environment file'],
  ['**/.git', 'git metadata'],
  ['**/.git/**', 'git metadata'],
  ['**/.ssh/**', 'SSH keys'],
  ['**/.aws/**', 'cloud credentials'],
  ['**/.gnupg/**', 'GnuPG keys'],
  ['**/{.npmrc,.pypirc,.netrc,.pgpass,.git-credentials}', 'a credentials file'],
  ['**/{id_rsa,id_dsa,id_ecdsa,id_ed25519}*', 'an SSH key'],
  ['**/*.{pem,key,p12,pfx,jks,keystore,crt,cer,der}', 'a key or certificate'],
  ['.ai/logs/**', "the gateway's audit log"],
  ['.ai/vectors/**', "the gateway's tool index"],
  ['.ai/state/**', "the gateway's state (client keys)"],
  ['.ai/threads/**', "the gateway's thread transcripts (every client's)"],
];

const matchers = SECRET_GLOBS.map(([glob, what]) => ({ test: picomatch(glob, { dot: true, windows: false }), what }));

/** What secret location `rel` (posix, relative to the project root) is, or undefined when it is none. */
export function secretKind(rel: string): string | undefined {
  return matchers.find((m) => m.test(rel))?.what;
}
