/**
 * Replaces the shapes secrets are known to take with `[redacted:<kind>]`, so the audit log never
 * holds a credential an agent read (a `.env`, a key file, an HTTP header) or was handed.
 *
 * Shapes, not guesses: each rule matches a documented token format, a private-key block, or a
 * value written under a name that says it is secret (`DB_PASSWORD=…`, `"api_key": "…"`). Ordinary
 * ids, hashes and prose pass through. Every pattern runs in linear time (no nested quantifiers,
 * bounded repeats), because the text is written by agents and tools, i.e. by whoever attacks.
 */

interface Rule {
  kind: string;
  pattern: RegExp;
  /** Rewrites a match; the default replaces all of it. */
  replace?: (match: string, ...groups: string[]) => string;
}

/**
 * A name that says its value is secret: it ends in one of these words (`GITHUB_TOKEN`,
 * `aws_secret_access_key`, `db.password`), so `max_tokens`, `tokenizer` or `secretary` do not.
 */
const SECRET_NAME = String.raw`[A-Za-z0-9_.-]{0,64}?(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credentials?)`;
const SECRET_NAME_EXACT = new RegExp(`^${SECRET_NAME}$`, 'i');
/** Header names whose whole value is a credential, as keys of a headers object. */
const SECRET_HEADER = /^(?:(?:proxy-)?authorization|(?:set-)?cookie)$/i;

// Order matters: whole blocks and headers first, so the rules after them see `[redacted:…]`.
const RULES: readonly Rule[] = [
  // An unterminated block (text cut short) is redacted to the end: the key material follows BEGIN.
  {
    kind: 'private-key',
    pattern: /-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|$)/g,
  },
  {
    kind: 'authorization',
    pattern: /\b((?:Proxy-)?Authorization|Set-Cookie|Cookie|X-Api-Key)(["']?[ \t]*[:=][ \t]*)("[^"\r\n]*"|'[^'\r\n]*'|[^\r\n]+)/gi,
    replace: (_match, name, separator, value) => `${name}${separator}${marker('authorization', value)}`,
  },
  { kind: 'bearer', pattern: /\b(Bearer)[ \t]+[A-Za-z0-9._~+/=-]{8,}/g, replace: (_match, word) => `${word} [redacted:bearer]` },
  { kind: 'aws-key', pattern: /\b(?:AKIA|ASIA)[A-Z0-9]{16}\b/g },
  // OpenAI (`sk-…`, `sk-proj-…`) and Anthropic (`sk-ant-…`) keys; a digit somewhere keeps kebab-case words out.
  { kind: 'api-key', pattern: /\bsk-(?=[A-Za-z0-9_-]{0,200}\d)[A-Za-z0-9_-]{20,}/g },
  { kind: 'github-token', pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})/g },
  { kind: 'gitlab-token', pattern: /\bglpat-[A-Za-z0-9_-]{20,}/g },
  // The gateway's own client keys (clients/key-store.ts).
  { kind: 'kiwi-key', pattern: /\bkiwi_[a-f0-9]{8}_[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])/g },
  { kind: 'slack-token', pattern: /\bxox[abposr]-[A-Za-z0-9-]{10,}/g },
  { kind: 'jwt', pattern: /\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{10,}/g },
  {
    kind: 'url-password',
    pattern: /\b([a-z][a-z0-9+.-]{0,20}:\/\/[^\s:/?#@]{1,256}:)[^\s/?#@]{1,256}@/gi,
    replace: (_match, head) => `${head}[redacted:url-password]@`,
  },
  // `.env`, YAML, JSON, query strings: the value after a secret name. A name must start a word and
  // not follow `/` or `.`, so paths like `/etc/passwd: …` keep their text.
  {
    kind: 'secret',
    pattern: new RegExp(
      String.raw`(?<![A-Za-z0-9_./\\-])(${SECRET_NAME}["']?[ \t]*[:=][ \t]*)("[^"\r\n]*"|'[^'\r\n]*'|[^\s"',;&}\]]+)`,
      'gi',
    ),
    replace: (match, head, value) => (/^["']?\[redacted:/.test(value) ? match : `${head}${marker('secret', value)}`),
  },
];

/** `text` with every known secret shape replaced by `[redacted:<kind>]`. */
export function redactSecrets(text: string): string {
  // Most text holds none of the rules' anchors; skip the passes for it.
  if (!MAYBE_SECRET.test(text)) return text;
  let out = text;
  for (const rule of RULES) {
    out = rule.replace
      ? out.replace(rule.pattern, rule.replace as (match: string, ...groups: string[]) => string)
      : out.replace(rule.pattern, `[redacted:${rule.kind}]`);
  }
  return out;
}

/** The marker for a redacted value, inside the same quotes the value had. */
function marker(kind: string, value: string): string {
  const quote = value[0] === '"' || value[0] === "'" ? value[0] : '';
  return `${quote}[redacted:${kind}]${quote}`;
}

/** Whether a property name says its value is a secret (`password`, `apiKey`, `GITHUB_TOKEN`). */
export function isSecretName(name: string): boolean {
  return name.length <= 128 && (SECRET_NAME_EXACT.test(name) || SECRET_HEADER.test(name));
}

const MAYBE_SECRET = /PRIVATE KEY|authori|cookie|x-api-key|bearer|AKIA|ASIA|sk-|gh[pousr]_|github_pat_|glpat-|kiwi_|xox|eyJ|:\/\/|pass|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential/i;
