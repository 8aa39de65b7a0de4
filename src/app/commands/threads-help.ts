import { defineHelp, KEY_FLAG, PROJECT_FLAG, URL_FLAG } from '../../cli/command-help.js';

/** A thread id as `kiwi threads list` prints it. */
const ID = '0195f3c1-0d2e-7f4a-9b3c-5e6f7a8b9c0d';

export const THREADS_HELP = defineHelp({
  name: 'threads',
  summary: 'directive threads: transcripts, follow, resume, cancel',
  usage: 'kiwi threads list | show ID | follow ID | resume ID [--message TEXT] [--model M] | cancel ID [--url URL] [--key KEY]   [--json] [--project DIR]',
  about: "The directive threads of this project (.ai/threads/, or with DATABASE_URL those of every gateway on that Postgres): each one's transcript, written as it runs.",
  flags: {
    json: { type: 'boolean', help: 'print as JSON (lines of the transcript, the list, the outcome)' },
    project: PROJECT_FLAG,
    message: { type: 'string', value: 'TEXT', help: 'a message for the agent as it goes on (resume)' },
    model: { type: 'string', value: 'M', help: 'the model to go on with (resume)' },
    url: { ...URL_FLAG, help: `${URL_FLAG.help} (cancel)` },
    key: { ...KEY_FLAG, help: `${KEY_FLAG.help} (cancel)` },
  },
  examples: [{ run: 'kiwi threads list' }, { run: `kiwi threads follow ${ID}` }],
  subcommands: [
    {
      name: 'list',
      summary: 'the threads, newest first, with how each ended',
      usage: 'kiwi threads list [--json] [--project DIR]',
      flags: ['json', 'project'],
      examples: [{ run: 'kiwi threads list' }],
    },
    {
      name: 'show',
      summary: "one thread's transcript and what it used",
      usage: 'kiwi threads show ID [--json] [--project DIR]',
      flags: ['json', 'project'],
      examples: [{ run: `kiwi threads show ${ID}` }],
    },
    {
      name: 'follow',
      summary: "one thread's transcript as it is written",
      usage: 'kiwi threads follow ID [--json] [--project DIR]',
      about: 'Prints the transcript, then each line as it is written, until the thread ends (exit 0), Ctrl-C, or it shows as cut short: no live process holds it any more (exit 1).',
      flags: ['json', 'project'],
      examples: [{ run: `kiwi threads follow ${ID}` }],
    },
    {
      name: 'resume',
      summary: 'go on with a thread that stopped, here',
      usage: 'kiwi threads resume ID [--message TEXT] [--model M] [--json] [--project DIR]',
      about: 'Goes on with a thread that stopped (failed, cancelled or cut short), here, as kiwi directives run runs one: the same thread, the directive as it is now, its limits counting what it already used. Exit 0 completed, 1 otherwise.',
      flags: ['message', 'model', 'json', 'project'],
      examples: [{ run: `kiwi threads resume ${ID}` }, { run: `kiwi threads resume ${ID} --message "the config is in config/app.yaml now"` }],
    },
    {
      name: 'cancel',
      summary: 'stop a thread a running gateway runs',
      usage: 'kiwi threads cancel ID [--url URL] [--key KEY]',
      about: "Cancels, through the gateway's kernel, the execution that runs the thread. A thread run by kiwi directives run stops with Ctrl-C instead.",
      flags: ['url', 'key'],
      examples: [{ run: `kiwi threads cancel ${ID}` }],
    },
  ],
});
