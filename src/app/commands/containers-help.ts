import { defineHelp } from '../../cli/command-help.js';

export const CONTAINERS_HELP = defineHelp({
  name: 'containers',
  summary: 'build or check the image sandboxed and restricted tools run in',
  usage: 'kiwi containers build|check',
  about: 'Tools with isolation sandboxed or restricted run in a podman container of the image localhost/kiwi-base, built from this machine\'s own files (nothing is downloaded).',
  flags: {},
  examples: [{ run: 'kiwi containers check' }],
  subcommands: [
    {
      name: 'build',
      summary: 'build the image (again) from this machine\'s own files',
      usage: 'kiwi containers build',
      about: 'Builds localhost/kiwi-base:VERSION with podman from the files of this machine; the gateway builds it on its first container call when it is missing, so this is for building it ahead of time or again. Exit 1 when podman is not installed.',
      flags: [],
      examples: [{ run: 'kiwi containers build' }],
    },
    {
      name: 'check',
      summary: 'whether containers run here',
      usage: 'kiwi containers check',
      about: 'Runs the probe the gateway runs before its first container call (building the image if it is missing) and says whether containers run here, with podman and its runtime, or why not. Exit 1 when they do not.',
      flags: [],
      examples: [{ run: 'kiwi containers check' }],
    },
  ],
});
