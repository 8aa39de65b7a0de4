// Appends the note (JSON arguments on stdin) to .ai/notes/notes.md, dated.
import { appendFileSync } from 'node:fs';

let input = '';
process.stdin.on('data', (chunk) => (input += chunk));
process.stdin.on('end', () => {
  const { text } = JSON.parse(input);
  const file = new URL('../../notes/notes.md', import.meta.url);
  appendFileSync(file, `- ${new Date().toISOString()}: ${String(text).replace(/\s+/g, ' ').trim()}\n`);
  process.stdout.write(`saved to .ai/notes/notes.md: ${text}`);
});
