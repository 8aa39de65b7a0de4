import { defineHelp, PROJECT_FLAG } from '../../cli/command-help.js';

export const REGISTRY_HELP = defineHelp({
  name: 'registry',
  summary: 'the registry tier in the database: push, pin, pull, list',
  usage: 'kiwi registry push [PATH…] | pull ID[@VERSION] [--force] | pin ID[@VERSION] | unpin ID | list | show ID  [--json] [--project DIR]',
  about:
    'The database tier of the registry: the Postgres of DATABASE_URL, else an embedded database in ~/.ai/state/registry. Every version pushed is kept and never changes. A project runs the items of this tier that its .ai/config/registry.yaml pins, each at its pinned version, and no others; pull copies one into the project tier instead.',
  flags: {
    json: { type: 'boolean', help: 'print as JSON' },
    force: { type: 'boolean', help: 'write over files of the project that differ (pull)' },
    project: PROJECT_FLAG,
  },
  examples: [{ run: 'kiwi registry push' }, { run: 'kiwi registry pin git_log' }, { run: 'kiwi registry pull git_log@1.2.0' }],
  subcommands: [
    {
      name: 'push',
      summary: "send the project's tools, directives and knowledge",
      usage: 'kiwi registry push [PATH…] [--json] [--project DIR]',
      about:
        "Sends the project tier's items (tools with their scripts, directives, knowledge), or only those defined in PATH…, to the registry tier. One line each: added, unchanged, conflict (that version is there with other content) or invalid. Exit 1 if any was refused.",
      flags: ['json', 'project'],
      examples: [{ run: 'kiwi registry push' }, { run: 'kiwi registry push .ai/tools/git_log.yaml', about: 'only the items this file defines' }],
    },
    {
      name: 'pin',
      summary: 'make the project run one version of an item',
      usage: 'kiwi registry pin ID[@VERSION] [--json] [--project DIR]',
      about:
        "Writes the version (default: the tier's latest) into .ai/config/registry.yaml, keeping the file's comments. The project runs the tier items it pins and no others; a newer push changes nothing until the pin does. It loads from the next `kiwi run` or gateway start.",
      flags: ['json', 'project'],
      examples: [{ run: 'kiwi registry pin git_log' }, { run: 'kiwi registry pin review_changes@2.0.0', about: 'that version, whatever the latest is' }],
    },
    {
      name: 'unpin',
      summary: 'stop running an item of the tier',
      usage: 'kiwi registry unpin ID [--json] [--project DIR]',
      about: "Removes the item's pin from .ai/config/registry.yaml: the project no longer loads it from the registry tier.",
      flags: ['json', 'project'],
      examples: [{ run: 'kiwi registry unpin git_log' }],
    },
    {
      name: 'pull',
      summary: "write one version into the project's .ai/",
      usage: 'kiwi registry pull ID[@VERSION] [--force] [--json] [--project DIR]',
      about: "Writes a version of the item (default: the latest) into the project's .ai/, file by file. Refuses, writing nothing, when a file there differs, unless --force.",
      flags: ['force', 'json', 'project'],
      examples: [{ run: 'kiwi registry pull git_log' }, { run: 'kiwi registry pull review_changes@2.0.0 --force' }],
    },
    {
      name: 'list',
      summary: "the tier's items with their latest version",
      usage: 'kiwi registry list [--json]',
      flags: ['json'],
      examples: [{ run: 'kiwi registry list' }],
    },
    {
      name: 'show',
      summary: 'every version of one item: who pushed it when, its digest',
      usage: 'kiwi registry show ID [--json]',
      about: 'Every version of the item: who pushed it and when, its digest, its signature and its files.',
      flags: ['json'],
      examples: [{ run: 'kiwi registry show git_log --json' }],
    },
  ],
});
