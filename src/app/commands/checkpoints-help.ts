import { defineHelp, PROJECT_FLAG } from '../../cli/command-help.js';

export const CHECKPOINTS_HELP = defineHelp({
  name: 'checkpoints',
  summary: 'git checkpoints taken before state-changing calls; restore',
  usage: 'kiwi checkpoints list [-n N] | diff ID [--stat] [--parent] | restore ID [--dry-run]  [--json] [--project DIR]',
  about:
    "Before each call of a tool that may change state, the gateway commits the work tree to a ref of its own (checkpoints in .ai/config/gateway.yaml), without touching the branch or the index. These commands read and restore them; the project must be a git work tree.",
  flags: {
    n: { type: 'string', short: 'n', value: 'N', default: '20', help: 'how many checkpoints to list, 1 to 10000 (list)' },
    stat: { type: 'boolean', help: 'the changed files only, not the patch (diff)' },
    parent: { type: 'boolean', help: 'compare with the checkpoint before it, not with the work tree (diff)' },
    'dry-run': { type: 'boolean', help: 'say what restore would write and remove, change nothing (restore)' },
    json: { type: 'boolean', help: 'print as JSON (list, restore)' },
    project: PROJECT_FLAG,
  },
  examples: [{ run: 'kiwi checkpoints list' }, { run: 'kiwi checkpoints restore 3f2a9c1 --dry-run' }],
  subcommands: [
    {
      name: 'list',
      summary: 'the checkpoints, newest first',
      usage: 'kiwi checkpoints list [-n N] [--json] [--project DIR]',
      about: 'Each checkpoint with its id, time and the call it was taken before.',
      flags: ['n', 'json', 'project'],
      examples: [{ run: 'kiwi checkpoints list -n 5' }],
    },
    {
      name: 'diff',
      summary: 'what restoring a checkpoint would undo',
      usage: 'kiwi checkpoints diff ID [--stat] [--parent] [--project DIR]',
      about: 'The difference between the checkpoint and the work tree as it is now, which is what restore would undo; with --parent, what changed between the checkpoint before it and this one.',
      flags: ['stat', 'parent', 'project'],
      examples: [{ run: 'kiwi checkpoints diff 3f2a9c1 --stat' }, { run: 'kiwi checkpoints diff 3f2a9c1 --parent', about: 'what the calls before this checkpoint changed' }],
    },
    {
      name: 'restore',
      summary: "put a checkpoint's files back (and it can be undone)",
      usage: 'kiwi checkpoints restore ID [--dry-run] [--json] [--project DIR]',
      about: "First checkpoints the work tree as it is, so the restore can itself be undone; then writes the checkpoint's files back and removes the files made since (never ignored ones).",
      flags: ['dry-run', 'json', 'project'],
      examples: [{ run: 'kiwi checkpoints restore 3f2a9c1 --dry-run' }, { run: 'kiwi checkpoints restore 3f2a9c1' }],
    },
  ],
});
