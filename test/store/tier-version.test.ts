import { describe, expect, it } from 'vitest';
import { checkVersion, tierFile, versionDigest, VERSION_LIMITS, type NewVersion } from '../../src/store/registry-tier/tier-version.js';

const good = (over: Partial<NewVersion> = {}): NewVersion => ({
  id: 'greet',
  type: 'tool',
  version: '1.0.0',
  folder: 'tools/demo',
  manifest: 'greet.yaml',
  signature: null,
  files: [tierFile('greet.yaml', Buffer.from('tool_id: greet\n')), tierFile('lib/greet.mjs', Buffer.from('console.log(1)\n'))],
  ...over,
});

const withFile = (name: string): NewVersion => good({ files: [...good().files, tierFile(name, Buffer.from('x'))] });

describe('a version of the registry tier, checked where it enters and where it leaves the database', () => {
  it('accepts an item folder inside a section of .ai/ with files in sub-folders', () => {
    expect(checkVersion(good())).toEqual(good());
    expect(checkVersion(good({ folder: 'knowledge', type: 'knowledge', version: '2' }))).toBeDefined();
  });

  it.each([
    ['../escape.sh', /file "\.\.\/escape\.sh": the path has an empty, "\." or "\.\." part/],
    ['lib/../../x', /the path has an empty, "\." or "\.\." part/],
    ['/etc/passwd', /the path is absolute/],
    ['C:/Windows/x', /the path is absolute/],
    ['a\0b', /contains a NUL character/],
    ['lib\\x.sh', /contains a backslash; use \/ between folders/],
    ['lib//x', /empty, "\." or "\.\." part/],
    ['./x', /empty, "\." or "\.\." part/],
    ['', /the path is empty/],
    ['a'.repeat(VERSION_LIMITS.maxPathLength + 1), /longer than 255 characters/],
  ])('refuses the file path %j', (name, message) => {
    expect(() => checkVersion(withFile(name))).toThrow(message);
  });

  it.each([
    ['folder outside the sections', { folder: 'config' }, /folder "config": the folder must be inside one of tools, scripts, directives, knowledge/],
    ['folder with ..', { folder: 'tools/../config' }, /folder "tools\/\.\.\/config"/],
    ['absolute folder', { folder: '/tmp/tools' }, /the path is absolute/],
    ['id with a slash', { id: 'a/b' }, /id: an id is 1-128 of A-Z/],
    ['id ..', { id: '..' }, /an id cannot be "\." or "\.\."/],
    ['version with a v', { version: 'v1.0.0' }, /version "v1\.0\.0": a version is numbers separated by dots/],
    ['version with words', { version: '1.0.0-beta' }, /a version is numbers separated by dots, like 1\.2\.0/],
    ['manifest not among the files', { manifest: 'other.yaml' }, /its manifest "other\.yaml" is not one of its files/],
    ['no files', { files: [] }, /has no files/],
  ])('refuses a %s', (_what, over, message) => {
    expect(() => checkVersion(good(over))).toThrow(message);
  });

  it('refuses a file listed twice, one whose bytes do not match its digest, and one over the caps', () => {
    expect(() => checkVersion(withFile('greet.yaml'))).toThrow(/file "greet\.yaml" is listed twice/);
    const [manifest] = good().files;
    expect(() => checkVersion(good({ files: [{ ...manifest!, bytes: Buffer.from('changed') }] }))).toThrow(/greet\.yaml does not match its digest/);
    const big = tierFile('big.bin', Buffer.alloc(VERSION_LIMITS.maxFileBytes + 1));
    expect(() => checkVersion(good({ files: [...good().files, big] }))).toThrow(/big\.bin is 1048577 bytes, more than 1048576/);
    const many = Array.from({ length: VERSION_LIMITS.maxFiles }, (_, i) => tierFile(`f${i}`, Buffer.from('x')));
    expect(() => checkVersion(good({ files: [...good().files, ...many] }))).toThrow(/has 66 files, more than 64/);
    const halves = Array.from({ length: 9 }, (_, i) => tierFile(`part${i}`, Buffer.alloc(VERSION_LIMITS.maxFileBytes)));
    expect(() => checkVersion(good({ files: [...good().files, ...halves] }))).toThrow(/bytes together, more than 8388608/);
  });

  it('digests the folder, manifest and files, in any order, and nothing else', () => {
    const base = versionDigest(good());
    expect(versionDigest(good({ files: [...good().files].reverse() }))).toBe(base);
    expect(versionDigest(good({ version: '9.9.9', signature: 'abc' }))).toBe(base);
    expect(versionDigest(good({ folder: 'tools/other' }))).not.toBe(base);
    expect(versionDigest(withFile('extra'))).not.toBe(base);
  });
});
