import { defineHelp } from '../../cli/command-help.js';

export const MODEL_HELP = defineHelp({
  name: 'model',
  summary: "rebuild or show the resolver's learned confidence model",
  usage: 'kiwi model train [--datasets DIR] [--out FILE] [--embedder use-lite|static] [--limit N] | kiwi model show [--model FILE] [--json]',
  about: "The resolver's learned confidence (models/resolver/model.json and its card): how sure a match must be before a call runs, learned from the shipped datasets.",
  flags: {
    datasets: { type: 'string', value: 'DIR', help: 'the datasets to learn from (train; default: ../shared/datasets beside the package)' },
    out: { type: 'string', value: 'FILE', help: 'where to write the model; its card goes beside it (train; default: models/resolver/model.json)' },
    embedder: { type: 'string', value: 'use-lite|static', help: 'the embedder to learn with (train; default: use-lite)' },
    limit: { type: 'string', value: 'N', help: 'use at most N cases of each dataset (train)' },
    model: { type: 'string', value: 'FILE', help: 'the model to show (show; default: models/resolver/model.json)' },
    json: { type: 'boolean', help: 'print the model as JSON (show)' },
  },
  examples: [{ run: 'kiwi model show' }, { run: 'kiwi model train --limit 50 --out /tmp/model.json' }],
  subcommands: [
    {
      name: 'train',
      summary: 'learn the model from the datasets (takes minutes)',
      usage: 'kiwi model train [--datasets DIR] [--out FILE] [--embedder use-lite|static] [--limit N]',
      about: 'Resolves every case of the datasets, learns the confidence from how the matches scored, and writes the model and its card. Progress goes to stderr every few seconds.',
      flags: ['datasets', 'out', 'embedder', 'limit'],
      examples: [{ run: 'kiwi model train' }, { run: 'kiwi model train --embedder static --limit 50 --out /tmp/model.json', about: 'a quick trial, not over the shipped model' }],
    },
    {
      name: 'show',
      summary: "print the model's card",
      usage: 'kiwi model show [--model FILE] [--json]',
      flags: ['model', 'json'],
      examples: [{ run: 'kiwi model show' }, { run: 'kiwi model show --model /tmp/model.json --json' }],
    },
  ],
});
