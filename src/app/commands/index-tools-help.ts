import { defineHelp, PROJECT_FLAG } from '../../cli/command-help.js';

export const INDEX_HELP = defineHelp({
  name: 'index',
  summary: 'embed every valid tool into .ai/vectors (LanceDB; incremental)',
  usage: 'kiwi index [--project DIR]',
  about:
    'Embeds every valid tool, directive and knowledge entry of the project into .ai/vectors/ (LanceDB), the index the resolver searches. Only what changed since the last run is embedded again (by content hash); the gateway and kiwi resolve bring the index up to date themselves, so this is for doing it ahead of time. Invalid items are named and left out.',
  flags: { project: PROJECT_FLAG },
  examples: [{ run: 'kiwi index' }, { run: 'kiwi index --project ~/work/shop', about: 'index another project' }],
});
