import { describe, expect, it } from 'vitest';
import { isSecretName, redactSecrets } from '../../src/audit/redact-secrets.js';

// Fake values in the real formats (AWS's own documented example key, random-looking bodies).
const GITHUB = `ghp_${'a1B2c3D4e5'.repeat(3)}abcdef`;
const GITHUB_PAT = `github_pat_11ABCDEFG0${'x9Y8z7'.repeat(10)}`;
const OPENAI = 'sk-proj-Xq3fT9vLm2Rk8Wz1Pn6Yb4Hc7Ud0Ja5Se2';
const ANTHROPIC = `sk-ant-api03-${'Zr4Tq9Lm2Vx7Bn1Ck6'.repeat(5)}-AAAA`;
const SLACK = 'xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUv';
const GITLAB = 'glpat-Ab3De6Gh9Jk2Mn5Pq8St';
const JWT = 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c';
const PEM_BODY = Array.from({ length: 12 }, (_, i) => `MIIEvQIBADANBgkqhkiG9w0BAQEFAASC${String(i).padStart(2, '0')}KcwggSjAgEAAoIBAQC7VJTUt9Us8cKj`).join('\n');

const ENV_FILE = `# local settings
NODE_ENV=development
PORT=8080
DATABASE_URL=postgres://app:s3cr3t-db-pw@db.internal:5432/app
DB_PASSWORD=hunter2-but-longer
export GITHUB_TOKEN="${GITHUB}"
AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE
AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY
OPENAI_API_KEY=${OPENAI}
STRIPE_SECRET='sk_live_51Hxyz'
SESSION_SECRET = changeme123
MAX_TOKENS=4096
`;

describe('redactSecrets', () => {
  it('redacts every secret in a .env file and keeps the rest of it', () => {
    const out = redactSecrets(ENV_FILE);
    for (const secret of ['s3cr3t-db-pw', 'hunter2-but-longer', GITHUB, 'AKIAIOSFODNN7EXAMPLE', 'wJalrXUtnFEMI', OPENAI, 'sk_live_51Hxyz', 'changeme123']) {
      expect(out).not.toContain(secret);
    }
    expect(out).toBe(`# local settings
NODE_ENV=development
PORT=8080
DATABASE_URL=postgres://app:[redacted:url-password]@db.internal:5432/app
DB_PASSWORD=[redacted:secret]
export GITHUB_TOKEN="[redacted:github-token]"
AWS_ACCESS_KEY_ID=[redacted:aws-key]
AWS_SECRET_ACCESS_KEY=[redacted:secret]
OPENAI_API_KEY=[redacted:api-key]
STRIPE_SECRET='[redacted:secret]'
SESSION_SECRET = [redacted:secret]
MAX_TOKENS=4096
`);
  });

  it('redacts a PEM private key block, and one cut short before its END line', () => {
    const pem = `key follows:\n-----BEGIN RSA PRIVATE KEY-----\n${PEM_BODY}\n-----END RSA PRIVATE KEY-----\nafter`;
    expect(redactSecrets(pem)).toBe('key follows:\n[redacted:private-key]\nafter');
    const openssh = `-----BEGIN OPENSSH PRIVATE KEY-----\n${PEM_BODY}\n-----END OPENSSH PRIVATE KEY-----`;
    expect(redactSecrets(openssh)).toBe('[redacted:private-key]');
    expect(redactSecrets(`x -----BEGIN PRIVATE KEY-----\n${PEM_BODY.slice(0, 200)}`)).toBe('x [redacted:private-key]');
    // A public key or certificate is not a secret.
    const cert = `-----BEGIN CERTIFICATE-----\n${PEM_BODY}\n-----END CERTIFICATE-----`;
    expect(redactSecrets(cert)).toBe(cert);
  });

  it('redacts tokens inside JSON, keeping it JSON', () => {
    const json = JSON.stringify({ user: 'ada', api_key: 'abc123def456', nested: { github: GITHUB, list: [JWT, SLACK] }, apiKey: 'k-1' });
    const out = redactSecrets(json);
    expect(JSON.parse(out)).toEqual({
      user: 'ada',
      api_key: '[redacted:secret]',
      nested: { github: '[redacted:github-token]', list: ['[redacted:jwt]', '[redacted:slack-token]'] },
      apiKey: '[redacted:secret]',
    });
  });

  it.each([
    ['an Anthropic key', `key ${ANTHROPIC} end`, 'key [redacted:api-key] end'],
    ['an OpenAI key', `use ${OPENAI}.`, 'use [redacted:api-key].'],
    ['a fine-grained GitHub token', `t=${GITHUB_PAT}`, 't=[redacted:github-token]'],
    ['a GitLab token', `"${GITLAB}"`, '"[redacted:gitlab-token]"'],
    ['a temporary AWS key', 'ASIAY34FZKBOKMUTVV7A', '[redacted:aws-key]'],
    ['a bearer token in prose', 'send Bearer abc.def-ghi_jkl= now', 'send Bearer [redacted:bearer] now'],
    ['an Authorization header', 'GET / HTTP/1.1\r\nAuthorization: Basic dXNlcjpwYXNz\r\nHost: x', 'GET / HTTP/1.1\r\nAuthorization: [redacted:authorization]\r\nHost: x'],
    ['a quoted Authorization header in JSON', '{"Authorization":"Bearer abcdefghij","Accept":"*/*"}', '{"Authorization":"[redacted:authorization]","Accept":"*/*"}'],
    ['a cookie header', 'Cookie: session=abcdef; theme=dark', 'Cookie: [redacted:authorization]'],
    ['a query-string token', 'https://api.example.com/v1?access_token=zzz111&page=2', 'https://api.example.com/v1?access_token=[redacted:secret]&page=2'],
    ['YAML', 'db:\n  password: "p@ss w0rd"\n  host: x', 'db:\n  password: "[redacted:secret]"\n  host: x'],
    ['a Kiwi client key', 'key kiwi_0a1b2c3d_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcde end', 'key [redacted:kiwi-key] end'],
  ])('redacts %s', (_name, input, expected) => {
    expect(redactSecrets(input)).toBe(expected);
  });

  it.each([
    'Read src/tokenizer.ts and count max_tokens=4096 for the secretary',
    'cat /etc/passwd: permission denied by policy (path outside the read globs)',
    'commit 3f786850e387550fdab836ed7e6dc881de23001b and uuid 123e4567-e89b-12d3-a456-426614174000',
    'a task-runner-configuration-manager-for-skeletons and sk-learn and risk-free-hedging-strategy-2024',
    'http://localhost:8080/api and mailto:ada@example.com and ssh://git@github.com/o/r.git',
    'sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855, base64 SGVsbG8gd29ybGQ=',
    'the token was rejected; please pass a password next time',
    '-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----',
    'export PATH=/usr/bin:/bin HOME=/home/ada PWD=/work',
  ])('leaves ordinary text alone: %s', (text) => {
    expect(redactSecrets(text)).toBe(text);
  });

  it('stays linear on text built to make regexes backtrack', () => {
    // Each of these would take minutes with a backtracking-prone pattern; here they return.
    const inputs = [
      'a'.repeat(200_000),
      'password'.repeat(50_000),
      `${'x_'.repeat(100_000)}token`,
      '-----BEGIN PRIVATE KEY-----'.repeat(10_000),
      `${'sk-'.repeat(50_000)}`,
      `https://${'a'.repeat(100_000)}:${'b'.repeat(100_000)}`,
      'eyJ'.repeat(100_000),
    ];
    for (const input of inputs) expect(typeof redactSecrets(input)).toBe('string');
  });
});

describe('isSecretName', () => {
  it.each(['password', 'DB_PASSWORD', 'apiKey', 'api-key', 'GITHUB_TOKEN', 'client_secret', 'aws_secret_access_key', 'credentials', 'refresh_token', 'Authorization', 'set-cookie'])('%s is secret', (name) => {
    expect(isSecretName(name)).toBe(true);
  });
  it.each(['path', 'max_tokens', 'token_count', 'tokenizer', 'secretary', 'password_hint', 'author', 'x'.repeat(300)])('%s is not', (name) => {
    expect(isSecretName(name)).toBe(false);
  });
});
