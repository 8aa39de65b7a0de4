import { defineHelp, PROJECT_FLAG } from '../../cli/command-help.js';

export const ENV_HELP = defineHelp({
  name: 'env',
  summary: 'environments: a directive saved with its inputs, tools, tier',
  usage: [
    'kiwi env save NAME --directive D [--input K=V]... [--tool ID]... [--knowledge ID]... [--tier T | --model M] [--description TEXT] [--force]',
    'list [--json]',
    'show NAME [--json]',
    'run NAME [--input K=V]... [--model M] [--json]   [--project DIR]',
  ].join('  |  '),
  about:
    'An environment (.ai/environments/NAME.yaml) is a directive saved with its inputs, the tools and knowledge it gets up front and its model tier, each item pinned at its version: a thread started from it runs with what was saved, and says so when an item has changed since.',
  flags: {
    directive: { type: 'string', value: 'D', help: 'the directive to save (save; required)' },
    input: { type: 'string', value: 'K=V', multiple: true, help: "one of the directive's inputs (save, run; run's win over the saved ones)" },
    tool: { type: 'string', value: 'ID', multiple: true, help: 'a tool the thread gets up front (save)' },
    knowledge: { type: 'string', value: 'ID', multiple: true, help: 'a knowledge entry the thread gets up front (save)' },
    tier: { type: 'string', value: 'T', help: 'the model tier to run on (save)' },
    model: { type: 'string', value: 'M', help: 'a model to save instead of a tier (save), or to run on (run)' },
    description: { type: 'string', value: 'TEXT', help: 'what the environment is for (save)' },
    force: { type: 'boolean', help: 'replace an environment of that name (save)' },
    json: { type: 'boolean', help: 'print as JSON (list, show, run)' },
    project: PROJECT_FLAG,
  },
  examples: [{ run: 'kiwi env save review_src --directive review_changes --input focus=src --tool git_diff' }, { run: 'kiwi env run review_src' }],
  subcommands: [
    {
      name: 'save',
      summary: 'save a directive with its inputs, tools, knowledge and tier',
      usage: 'kiwi env save NAME --directive D [--input K=V]... [--tool ID]... [--knowledge ID]... [--tier T | --model M] [--description TEXT] [--force] [--project DIR]',
      about: 'Writes .ai/environments/NAME.yaml, each item pinned at the version it has now. The inputs are checked as a run checks them, except that a required one may be left for the run.',
      flags: ['directive', 'input', 'tool', 'knowledge', 'tier', 'model', 'description', 'force', 'project'],
      examples: [
        { run: 'kiwi env save review_src --directive review_changes --input focus=src --tool git_diff --tool git_log' },
        { run: 'kiwi env save review_src --directive review_changes --tier fast --force', about: 'replace it, on the fast tier' },
      ],
    },
    {
      name: 'list',
      summary: 'the environments, and whether each is as it was saved',
      usage: 'kiwi env list [--json] [--project DIR]',
      about: 'Exit 1 when a file does not load.',
      flags: ['json', 'project'],
      examples: [{ run: 'kiwi env list' }],
    },
    {
      name: 'show',
      summary: 'one environment, item by item, and what changed since',
      usage: 'kiwi env show NAME [--json] [--project DIR]',
      about: 'Exit 1 when an item it pinned has changed since it was saved.',
      flags: ['json', 'project'],
      examples: [{ run: 'kiwi env show review_src' }],
    },
    {
      name: 'run',
      summary: 'start a thread from an environment, here',
      usage: 'kiwi env run NAME [--input K=V]... [--model M] [--json] [--project DIR]',
      about: 'Runs a thread as kiwi directives run does, with what the environment saved. Exit 0 completed, 1 otherwise.',
      flags: ['input', 'model', 'json', 'project'],
      examples: [{ run: 'kiwi env run review_src' }, { run: 'kiwi env run review_src --input focus=src/auth' }],
    },
  ],
});
