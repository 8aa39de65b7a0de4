import { defineHelp, PROJECT_FLAG } from '../../cli/command-help.js';

export const PREDICTOR_HELP = defineHelp({
  name: 'predictor',
  summary: 'learn which tool follows which from the audit log, or show it',
  usage: 'kiwi predictor train [--project DIR] [--out FILE] | kiwi predictor show [--model FILE] [-n N] [--json]',
  about: "The prefetch predictor: which tool call tends to follow which, learned from the project's audit log into .ai/state/predictor.json. The gateway reads it to run likely next read-only calls ahead of time.",
  flags: {
    project: PROJECT_FLAG,
    out: { type: 'string', value: 'FILE', help: 'where to write the model (train; default: .ai/state/predictor.json)' },
    model: { type: 'string', value: 'FILE', help: 'the model to show (show; default: .ai/state/predictor.json)' },
    n: { type: 'string', short: 'n', value: 'N', default: '10', help: 'how many top transitions to print, 1 to 1000' },
    json: { type: 'boolean', help: 'print the model as JSON (show)' },
  },
  examples: [{ run: 'kiwi predictor train' }, { run: 'kiwi predictor show -n 20' }],
  subcommands: [
    {
      name: 'train',
      summary: 'learn from the audit log and print the top transitions',
      usage: 'kiwi predictor train [--out FILE] [-n N] [--project DIR]',
      about: 'Reads the allowed, successful calls of .ai/logs/audit/ (from the gateway, MCP and the CLI), learns which tool follows which in a session, and writes the model. Exit 1 when there is nothing to learn from.',
      flags: ['out', 'n', 'project'],
      examples: [{ run: 'kiwi predictor train' }],
    },
    {
      name: 'show',
      summary: 'the top transitions of the model',
      usage: 'kiwi predictor show [--model FILE] [-n N] [--json] [--project DIR]',
      flags: ['model', 'n', 'json', 'project'],
      examples: [{ run: 'kiwi predictor show -n 20' }, { run: 'kiwi predictor show --json' }],
    },
  ],
});
