/**
 * The lazily loaded JSON gateway (src/api/gateway/lazy-gateway.ts) on a real HTTP server on 127.0.0.1, with
 * a loader the test settles: the first request waits for the load and is handed over; a loader that fails or
 * a gateway that throws on that request ends it 500 INTERNAL as the gateway would, logged, and never escapes
 * as an unhandled rejection; a request whose client left during the load is not handed over.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { GatewayHandler } from '../../../src/api/gateway/gateway.js';
import { lazyGateway, type GatewayLoader } from '../../../src/api/gateway/lazy-gateway.js';
import { createLogger } from '../../../src/config/log.js';
import { settle } from '../../settle.js';

const servers: http.Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

/** A server whose gateway loads when `settle` is called; `first` is its first request; `lines` what it logs. */
async function serve() {
  const lines: string[] = [];
  let settle!: (r: GatewayHandler | Error) => void;
  const loaded = new Promise<GatewayHandler>((resolve, reject) => {
    settle = (r) => (r instanceof Error ? reject(r) : resolve(r));
  });
  const load: GatewayLoader = () => loaded;
  let arrived!: (res: http.ServerResponse) => void;
  const first = new Promise<http.ServerResponse>((resolve) => (arrived = resolve));
  const gateway = lazyGateway(new Map(), createLogger({ level: 'error', sink: (l) => lines.push(l) }), load);
  const server = http.createServer((req, res) => {
    arrived(res);
    if (!gateway(req, res)) res.writeHead(404).end();
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, lines, settle, first };
}

function post(port: number): { answer: Promise<{ status: number; body: string }>; req: http.ClientRequest } {
  const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/v3/kv/range', headers: { 'content-type': 'application/json' } });
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
  req.end('{"key":"YQ=="}');
  return { answer, req };
}

describe('the lazily loaded gateway', () => {
  it('hands the first request to the gateway once it is loaded', async () => {
    const s = await serve();
    const { answer } = post(s.port);
    await s.first;
    s.settle((_req, res) => {
      res.writeHead(200).end('ok');
      return true;
    });
    expect(await answer).toEqual({ status: 200, body: 'ok' });
  });

  it('answers 500 INTERNAL, as the gateway would, when the gateway throws on the first request', async () => {
    const s = await serve();
    const { answer } = post(s.port);
    await s.first;
    s.settle(() => {
      throw new Error('boom');
    });
    const { status, body } = await answer;
    expect(status).toBe(500);
    expect(JSON.parse(body)).toEqual({ error: 'internal error', message: 'internal error', code: 13 });
    expect(s.lines.join('\n')).toContain('boom');
  }, 5_000); // without the catch the client waits for ever

  it('answers 500 INTERNAL when the gateway cannot be loaded', async () => {
    const s = await serve();
    const { answer } = post(s.port);
    await s.first;
    s.settle(new Error('no such module'));
    expect((await answer).status).toBe(500);
    expect(s.lines.join('\n')).toContain('no such module');
  });

  it('does not hand over a request whose client left while the gateway loaded', async () => {
    const s = await serve();
    const { req, answer } = post(s.port);
    const res = await s.first;
    req.destroy();
    await expect(answer).rejects.toThrow();
    if (!res.destroyed) await new Promise((resolve) => res.once('close', resolve));
    let handed = 0;
    s.settle((_req, r) => {
      handed++;
      r.writeHead(200).end('late');
      return true;
    });
    await settle();
    expect(handed).toBe(0);
    expect(s.lines).toEqual([]);
  });
});
