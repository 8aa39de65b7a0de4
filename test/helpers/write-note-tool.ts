/** A tool that may change state (no `mutates_state`): it appends its `text` to note.txt at the project root, so checkpoints are taken before it. */
export const WRITE_NOTE_TOOL = `tool_id: write_note
tool_type: script
executor: subprocess
version: "1.0.0"
description: writes note.txt
config: { command: node, args: ["-e", "require('fs').appendFileSync('note.txt', process.argv[1] + '\\\\n')", "{text}"] }
parameters:
  - { name: text, type: string, required: true }
`;
