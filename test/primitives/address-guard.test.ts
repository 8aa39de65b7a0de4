import type { LookupAddress } from 'node:dns';
import { afterEach, describe, expect, it } from 'vitest';
import { createAddressGuard, type AddressGuardOptions } from '../../src/primitives/address-guard.js';
import { createHttpClient, type HttpClient } from '../../src/primitives/http-client.js';
import { createLocalServers } from '../fixtures/http/local-servers.js';
import { failure } from '../helpers/expect-failure.js';

const servers = createLocalServers();
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  await servers.closeAll();
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

function client(options: AddressGuardOptions = {}): HttpClient {
  const guard = createAddressGuard(options);
  const http = createHttpClient({ addressGuard: guard });
  cleanups.push(async () => {
    await http.close();
    await guard.close();
  });
  return http;
}

const ok = async () => servers.serve((req, res) => res.end(`reached ${req.url} as ${req.headers.host}`));

describe('address guard: hosts chosen by someone other than the author', () => {
  it('refuses 127.0.0.1, naming the host, the address, the range and how to allow it', async () => {
    const { url, port, seen } = await ok();
    const error = await failure(client().request({ method: 'GET', url: `${url}/x`, guard: {} }), 'POLICY_DENIED');
    expect(error.message).toBe(
      `GET http://127.0.0.1:${port}/x was refused: 127.0.0.1 is a loopback address (127.0.0.0/8); a host that a call's arguments or a redirect chose may only be a public address. ` +
        'If tools may reach it, add "127.0.0.1" (or the range "127.0.0.0/8") to network.allow_private in .ai/config/policy.yaml',
    );
    expect(seen).toEqual([]);
  });

  it.each(['2130706433', '0177.0.0.1', '0x7f.0.0.1', '0x7f000001', '127.1', '127.0.1', '%31%32%37.0.0.1', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '[0:0:0:0:0:ffff:127.0.0.1]', '[64:ff9b::127.0.0.1]', '[::1]', '[::]', '0.0.0.0', '0'])(
    'refuses the literal form http://%s:PORT/',
    async (host) => {
      const { port, seen } = await ok();
      const error = await failure(client().request({ method: 'GET', url: `http://${host}:${port}/`, guard: {} }), 'POLICY_DENIED');
      expect(error.message).toMatch(/ is (127\.0\.0\.1 \([A-Za-z0-9 -]+\), )?an? (loopback|unspecified|reserved)/);
      expect(seen).toEqual([]);
    },
  );

  it('refuses a name that resolves to loopback, in any case, and names the name', async () => {
    const { port, seen } = await ok();
    for (const host of ['localhost', 'LOCALHOST']) {
      const error = await failure(client().request({ method: 'GET', url: `http://${host}:${port}/`, guard: {} }), 'POLICY_DENIED');
      expect(error.message).toMatch(/: localhost resolves to (127\.0\.0\.1|::1), a loopback address .* add "localhost" \(or the range/);
    }
    expect(seen).toEqual([]);
  });

  it('refuses trailing-dot hosts: a literal, and a name that resolves to a private address', async () => {
    const { port, seen } = await ok();
    const resolve = async (name: string): Promise<LookupAddress[]> => (name === 'inside.test.' ? [{ address: '192.168.1.7', family: 4 }] : []);
    await failure(client({ resolve }).request({ method: 'GET', url: `http://127.0.0.1.:${port}/`, guard: {} }), 'POLICY_DENIED');
    const error = await failure(client({ resolve }).request({ method: 'GET', url: 'http://inside.test./', guard: {} }), 'POLICY_DENIED');
    expect(error.message).toContain('inside.test. resolves to 192.168.1.7, a private address (192.168.0.0/16); ');
    expect(error.message).toContain('add "inside.test" (or the range "192.168.0.0/16")');
    expect(seen).toEqual([]);
  });

  it('refuses userinfo tricks and IPv6 zone ids before anything is sent', async () => {
    const { port, seen } = await ok();
    await failure(client().request({ method: 'GET', url: `http://example.com@127.0.0.1:${port}/`, guard: {} }), 'INVALID_INPUT');
    await failure(client().request({ method: 'GET', url: `http://[fe80::1%25lo]:${port}/`, guard: {} }), 'INVALID_INPUT');
    expect(seen).toEqual([]);
  });

  it('refuses a name when ANY of its addresses is private, resolving it once, inside the connection', async () => {
    const asked: string[] = [];
    const resolve = async (name: string): Promise<LookupAddress[]> => {
      asked.push(name);
      return [{ address: '93.184.215.14', family: 4 }, { address: '10.0.0.5', family: 4 }];
    };
    const error = await failure(client({ resolve }).request({ method: 'GET', url: 'http://mixed.test/', guard: {} }), 'POLICY_DENIED');
    expect(error.message).toContain('mixed.test resolves to 10.0.0.5, a private address (10.0.0.0/8)');
    expect(asked).toEqual(['mixed.test']);
  });

  it('connects to the very address it checked: a name only the guard can resolve reaches the local server', async () => {
    const { port } = await ok();
    const asked: string[] = [];
    const resolve = async (name: string): Promise<LookupAddress[]> => (asked.push(name), [{ address: '127.0.0.1', family: 4 }]);
    const res = await client({ resolve, allowPrivate: ['127.0.0.0/8'] }).request({ method: 'GET', url: `http://pinned.test:${port}/p`, guard: {} });
    expect(res.body).toBe(`reached /p as pinned.test:${port}`);
    expect(asked).toEqual(['pinned.test']);
  });
});

describe('address guard: the author host and redirects', () => {
  it('lets the host the author wrote through as written, with or without the guard', async () => {
    const { url, port } = await ok();
    const res = await client().request({ method: 'GET', url: `${url}/a`, guard: { authorHost: `127.0.0.1:${port}` } });
    expect(res.body).toBe(`reached /a as 127.0.0.1:${port}`);
    expect((await client().request({ method: 'GET', url: `${url}/b` })).status).toBe(200);
  });

  it('refuses a redirect from the author host to 127.0.0.1 on another port, naming the chain', async () => {
    const target = await ok();
    const { url, port } = await servers.serve((_req, res) => res.writeHead(302, { location: `${target.url}/secret` }).end());
    const error = await failure(client().request({ method: 'GET', url: `${url}/go`, guard: { authorHost: `127.0.0.1:${port}` } }), 'POLICY_DENIED');
    expect(error.message).toMatch(new RegExp(`^GET ${target.url}/secret was refused \\(redirected from ${url}/go\\): 127\\.0\\.0\\.1 is a loopback address`));
    expect(target.seen).toEqual([]);
  });

  it('refuses a redirect to a name that resolves to loopback', async () => {
    const target = await ok();
    const { url, port } = await servers.serve((_req, res) => res.writeHead(307, { location: `http://localhost:${target.port}/secret` }).end());
    const error = await failure(client().request({ method: 'GET', url: `${url}/go`, guard: { authorHost: `127.0.0.1:${port}` } }), 'POLICY_DENIED');
    expect(error.message).toMatch(/\(redirected from .*\/go\): localhost resolves to/);
    expect(target.seen).toEqual([]);
  });

  it('lets through what network.allow_private names: a range, an address, a host name', async () => {
    const target = await ok();
    const { url, port } = await servers.serve((_req, res) => res.writeHead(302, { location: `http://localhost:${target.port}/in` }).end());
    const authorHost = `127.0.0.1:${port}`;
    for (const allowPrivate of [['127.0.0.0/8', '::1'], ['localhost'], ['LOCALHOST.']]) {
      const res = await client({ allowPrivate }).request({ method: 'GET', url: `${url}/go`, guard: { authorHost } });
      expect(res.body, allowPrivate.join()).toBe(`reached /in as localhost:${target.port}`);
    }
    expect((await client({ allowPrivate: ['127.0.0.1'] }).request({ method: 'GET', url: `${target.url}/x`, guard: {} })).status).toBe(200);
    await failure(client({ allowPrivate: ['10.0.0.0/8', 'other.example'] }).request({ method: 'GET', url: `${target.url}/x`, guard: {} }), 'POLICY_DENIED');
  });

  it('refuses an allowance that is neither a host name, an address nor a range', () => {
    for (const bad of ['10.0.0.0/33', 'http://x', 'a b', '*.example.com']) {
      expect(() => createAddressGuard({ allowPrivate: [bad] }), bad).toThrow(/network\.allow_private: .* is not a host name, an IP address or a CIDR range/);
    }
  });
});
