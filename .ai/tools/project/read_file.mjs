// Reads one file; the gateway has already checked the path against the policy and resolved it.
import { open } from 'node:fs/promises';

const { path, max_bytes: maxBytes } = JSON.parse(await readStdin());
const handle = await open(path, 'r');
try {
  const buffer = Buffer.alloc(Math.min(maxBytes, 1 << 20));
  const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
  const { size } = await handle.stat();
  process.stdout.write(buffer.subarray(0, bytesRead).toString('utf8'));
  if (size > bytesRead) process.stdout.write(`\n… (${size - bytesRead} more bytes not shown)\n`);
} finally {
  await handle.close();
}

async function readStdin() {
  let text = '';
  for await (const chunk of process.stdin) text += chunk;
  return text;
}
