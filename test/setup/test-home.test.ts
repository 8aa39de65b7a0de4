import { existsSync } from 'node:fs';
import { homedir, tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

describe("a test file's HOME", () => {
  it("is an empty folder of its own, never the account's home", () => {
    expect(homedir()).not.toBe(userInfo().homedir);
    expect(path.dirname(homedir())).toBe(tmpdir());
    expect(existsSync(path.join(homedir(), '.ai'))).toBe(false);
  });
});
