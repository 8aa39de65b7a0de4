import { defineHelp } from '../../cli/command-help.js';

/** `kiwi sign` and `kiwi verify` take the same flag. */
const KIND = { type: 'string', value: 'KIND', help: 'directive, knowledge or tool (default: Markdown under knowledge/ is knowledge, other Markdown a directive, anything else a tool)' } as const;

export const SIGN_HELP = defineHelp({
  name: 'sign',
  summary: 'write the kiwi-mcp:validated signature line into files',
  usage: 'kiwi sign FILE... [--kind directive|knowledge|tool]',
  about: 'Writes (or replaces) the kiwi-mcp:validated line, with the hash of the content, after a person has reviewed the file. A signed file that changes afterwards shows as INVALID in kiwi verify.',
  flags: { kind: KIND },
  examples: [{ run: 'kiwi sign .ai/directives/review_changes.md' }, { run: 'kiwi sign notes.txt --kind knowledge' }],
});

export const VERIFY_HELP = defineHelp({
  name: 'verify',
  summary: 'check the kiwi-mcp:validated signature line of files',
  usage: 'kiwi verify FILE... [--kind directive|knowledge|tool]',
  about: 'Says for each file whether it is signed and unchanged since (valid), not signed, or changed after signing (INVALID). Exit 1 if any is not valid.',
  flags: { kind: KIND },
  examples: [{ run: 'kiwi verify .ai/directives/*.md' }],
});
