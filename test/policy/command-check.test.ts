import { describe, expect, it } from 'vitest';
import { checkCommand } from '../../src/policy/command-check.js';
import { childContext, createPermissionContext, emptyRules, type CommandRule } from '../../src/policy/permission-context.js';

function ctxWith(commands: CommandRule[], label = 'policy .ai/config/policy.yaml') {
  return createPermissionContext('/proj', { ...emptyRules(), commands }, label);
}

const git: CommandRule = {
  executable: 'git',
  subcommands: ['status', 'log', 'diff', 'fetch'],
  denyArgs: ['^--upload-pack', '^--exec', '^-c$', '^--config'],
};

describe('checkCommand', () => {
  it('default deny: no rules, no commands', () => {
    expect(checkCommand(ctxWith([]), ['ls'])).toEqual({
      allowed: false,
      reason: 'denied by policy .ai/config/policy.yaml: command `ls` is not in `commands`',
    });
  });

  it('allows a listed executable with an allowed subcommand', () => {
    expect(checkCommand(ctxWith([git]), ['git', 'status', '--short'])).toEqual({ allowed: true });
    expect(checkCommand(ctxWith([git]), ['git', 'log', '-n', '5'])).toEqual({ allowed: true });
  });

  it('denies a subcommand not in the list, or none at all, or global options before it', () => {
    const ctx = ctxWith([git]);
    expect(checkCommand(ctx, ['git', 'push'])).toEqual({
      allowed: false,
      reason: 'denied by policy .ai/config/policy.yaml: `git` may run only the subcommands `status`, `log`, `diff`, `fetch`; got `push`',
    });
    expect(checkCommand(ctx, ['git'])).toMatchObject({ allowed: false, reason: expect.stringContaining('none was given') });
    expect(checkCommand(ctx, ['git', '-C', '/elsewhere', 'status'])).toMatchObject({ allowed: false, reason: expect.stringContaining('got `-C`') });
  });

  it('denies --upload-pack=evil and -c through denyArgs', () => {
    const ctx = ctxWith([git]);
    expect(checkCommand(ctx, ['git', 'fetch', '--upload-pack=evil'])).toEqual({
      allowed: false,
      reason: 'denied by policy .ai/config/policy.yaml: argument `--upload-pack=evil` (argv[2]) of `git` matches the denied pattern `^--upload-pack`',
    });
    expect(checkCommand(ctx, ['git', 'fetch', '--upload-pack', 'evil'])).toMatchObject({ allowed: false });
    expect(checkCommand(ctx, ['git', 'log', '-c', 'core.pager=evil'])).toMatchObject({ allowed: false, reason: expect.stringContaining('`^-c$`') });
  });

  it('denies --upload-pack=evil through allowFlags, and allows listed and `--opt=*` flags', () => {
    const ctx = ctxWith([{ executable: 'git', subcommands: ['fetch', 'log'], allowFlags: ['--dry-run', '--format=*', '-n'] }]);
    expect(checkCommand(ctx, ['git', 'fetch', '--upload-pack=evil'])).toEqual({
      allowed: false,
      reason: 'denied by policy .ai/config/policy.yaml: option `--upload-pack=evil` (argv[2]) of `git` is not in its `allow_flags`',
    });
    // Abbreviated long options slip past a deny list; an allow list catches them.
    expect(checkCommand(ctx, ['git', 'fetch', '--upload-pa=evil'])).toMatchObject({ allowed: false });
    expect(checkCommand(ctx, ['git', 'fetch', '--dry-run', 'origin'])).toEqual({ allowed: true });
    expect(checkCommand(ctx, ['git', 'log', '--format=%H', '-n', '3'])).toEqual({ allowed: true });
    expect(checkCommand(ctx, ['git', 'log', '--format'])).toMatchObject({ allowed: false });
    expect(checkCommand(ctx, ['git', 'log', '--', 'src'])).toMatchObject({ allowed: false, reason: expect.stringContaining('option `--`') });
  });

  it('denies a shell string as argv[0] with a clear reason', () => {
    const ctx = ctxWith([git]);
    expect(checkCommand(ctx, ['git; rm -rf ~'])).toEqual({
      allowed: false,
      reason: 'denied by policy .ai/config/policy.yaml: command `git; rm -rf ~` is not in `commands`',
    });
  });

  it('matches argv[0] exactly: a path is not the bare name, unless listed as that path', () => {
    expect(checkCommand(ctxWith([git]), ['/usr/bin/git', 'status'])).toEqual({
      allowed: false,
      reason:
        'denied by policy .ai/config/policy.yaml: command `/usr/bin/git` is not in `commands` (executables are matched exactly; a path runs only when the rule names that same path)',
    });
    expect(checkCommand(ctxWith([git]), ['./git', 'status'])).toMatchObject({ allowed: false });
    expect(checkCommand(ctxWith([{ executable: '/usr/bin/git' }]), ['/usr/bin/git', 'status'])).toEqual({ allowed: true });
    expect(checkCommand(ctxWith([{ executable: '/usr/bin/git' }]), ['git', 'status'])).toMatchObject({ allowed: false });
  });

  it('allows $(…) and backticks as inert literals when rules allow, and denies them when a rule says so', () => {
    const echo = ctxWith([{ executable: 'echo' }]);
    expect(checkCommand(echo, ['echo', '$(rm -rf ~)', '`id`'])).toEqual({ allowed: true });
    const strict = ctxWith([{ executable: 'echo', denyArgs: ['[`$]'] }]);
    expect(checkCommand(strict, ['echo', '$(rm -rf ~)'])).toEqual({
      allowed: false,
      reason: 'denied by policy .ai/config/policy.yaml: argument `$(rm -rf ~)` (argv[1]) of `echo` matches the denied pattern "[`$]"',
    });
  });

  it('denies NUL bytes, empty argv and an empty program', () => {
    const ctx = ctxWith([{ executable: 'echo' }]);
    expect(checkCommand(ctx, ['echo', 'a\0b'])).toEqual({
      allowed: false,
      reason: 'denied by policy .ai/config/policy.yaml: argv[1] "a\\u0000b" contains a NUL byte',
    });
    expect(checkCommand(ctx, [])).toMatchObject({ allowed: false, reason: expect.stringContaining('command is empty') });
    expect(checkCommand(ctx, [''])).toMatchObject({ allowed: false, reason: expect.stringContaining('argv[0] is empty') });
  });

  it('passes when any of several rules for one executable passes', () => {
    const ctx = ctxWith([
      { executable: 'git', subcommands: ['status'] },
      { executable: 'git', subcommands: ['log'], allowFlags: ['--oneline'] },
    ]);
    expect(checkCommand(ctx, ['git', 'log', '--oneline'])).toEqual({ allowed: true });
    expect(checkCommand(ctx, ['git', 'push'])).toMatchObject({ allowed: false, reason: expect.stringContaining('`status`; got `push`') });
  });

  it('a child cannot widen, and a narrower child is named when it denies', () => {
    const parent = ctxWith([git]);
    const wide = childContext(parent, { ...emptyRules(), commands: [{ executable: 'git' }, { executable: 'rm' }] }, 'directive foo');
    expect(checkCommand(wide, ['git', 'push'])).toMatchObject({ allowed: false, reason: expect.stringMatching(/^denied by policy /u) });
    expect(checkCommand(wide, ['rm', '-rf', '/'])).toMatchObject({ allowed: false, reason: expect.stringMatching(/^denied by policy /u) });
    expect(checkCommand(wide, ['git', 'status'])).toEqual({ allowed: true });
    const narrow = childContext(parent, { ...emptyRules(), commands: [{ executable: 'git', subcommands: ['status'] }] }, 'directive foo');
    expect(checkCommand(narrow, ['git', 'log'])).toMatchObject({ allowed: false, reason: expect.stringMatching(/^denied by directive foo: /u) });
  });
});
