import { defineHelp, PROJECT_FLAG } from '../../cli/command-help.js';

/** A run id as `kiwi pipelines runs` prints it. */
const RUN = '0195f3c3-1a2b-7c4d-8e5f-6a7b8c9d0e1f';

export const PIPELINES_HELP = defineHelp({
  name: 'pipelines',
  summary: 'directives run in sequence or side by side, stage by stage',
  usage: 'kiwi pipelines list | run NAME [--input KEY=VALUE]... [--steps] | runs | show RUN | resume RUN [--steps]   [--json] [--project DIR]',
  about: "A pipeline (.ai/pipelines/NAME.yaml) runs directives in stages, in sequence or side by side; each stage is a thread, handed the earlier stages' results. Runs are kept in the threads' headers, so one that stopped can go on.",
  flags: {
    input: { type: 'string', value: 'KEY=VALUE', multiple: true, help: "one of the pipeline's inputs (run)" },
    steps: { type: 'boolean', help: "print each stage's thread lines too, not only its start and end (run, resume)" },
    json: { type: 'boolean', help: 'print as JSON' },
    project: PROJECT_FLAG,
  },
  examples: [{ run: 'kiwi pipelines run release_check --input focus=src' }, { run: 'kiwi pipelines runs' }],
  subcommands: [
    {
      name: 'list',
      summary: 'the pipelines, and the files that did not load, with why',
      usage: 'kiwi pipelines list [--json] [--project DIR]',
      flags: ['json', 'project'],
      examples: [{ run: 'kiwi pipelines list' }],
    },
    {
      name: 'run',
      summary: 'run a pipeline here, each stage printed as it starts and ends',
      usage: 'kiwi pipelines run NAME [--input KEY=VALUE]... [--steps] [--json] [--project DIR]',
      about: 'Each stage is a directive thread, run as kiwi directives run runs one. Exit 0 completed, 1 failed or cancelled.',
      flags: ['input', 'steps', 'json', 'project'],
      examples: [{ run: 'kiwi pipelines run release_check' }, { run: 'kiwi pipelines run release_check --input focus=src/auth --steps' }],
    },
    {
      name: 'runs',
      summary: 'the runs, newest first',
      usage: 'kiwi pipelines runs [--json] [--project DIR]',
      flags: ['json', 'project'],
      examples: [{ run: 'kiwi pipelines runs' }],
    },
    {
      name: 'show',
      summary: "one run's stages, their threads, status and results",
      usage: 'kiwi pipelines show RUN [--json] [--project DIR]',
      flags: ['json', 'project'],
      examples: [{ run: `kiwi pipelines show ${RUN}` }],
    },
    {
      name: 'resume',
      summary: 'go on with a run that stopped',
      usage: 'kiwi pipelines resume RUN [--steps] [--json] [--project DIR]',
      about: 'Reuses the stages that completed, resumes the threads that stopped and runs the rest, with the inputs the run started with. Exit 0 completed, 1 failed or cancelled.',
      flags: ['steps', 'json', 'project'],
      examples: [{ run: `kiwi pipelines resume ${RUN}` }],
    },
  ],
});
