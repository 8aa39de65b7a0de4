import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';

/**
 * A unix datagram socket at `file`, as journald's or /dev/log are, served by python3 (node has no
 * unix datagram sockets). `received()` returns the datagrams that arrived since the last ask: a
 * datagram is in the queue once sendto() returned, so the server drains it when asked, no waiting.
 */
export interface DatagramServer {
  file: string;
  received(): Promise<string[]>;
  close(): Promise<void>;
}

const SERVER = `import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.setblocking(False)
print('ready', flush=True)
for _ in sys.stdin:
    got = []
    while True:
        try:
            got.append(s.recv(65536).decode('utf-8', 'replace'))
        except BlockingIOError:
            break
    print(json.dumps(got), flush=True)
`;

export async function serveDatagrams(file: string): Promise<DatagramServer> {
  const child = spawn('python3', ['-c', SERVER, file], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async (): Promise<string> => {
    const line = await lines.next();
    if (line.done === true) throw new Error(`the datagram server at ${file} ended`);
    return line.value as string;
  };
  const first = await next();
  if (first !== 'ready') throw new Error(`the datagram server at ${file} said ${first}`);
  return {
    file,
    async received() {
      child.stdin.write('\n');
      return JSON.parse(await next()) as string[];
    },
    async close() {
      const exited = child.exitCode === null ? once(child, 'exit') : Promise.resolve();
      child.stdin.end();
      await exited;
    },
  };
}
