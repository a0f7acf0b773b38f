/**
 * On FakeApi (issue 35): the listener's error handling, not the services, is under test.
 *
 * An accept error on a listening socket (EMFILE under a connection flood once libuv's spare descriptor is
 * gone, ENFILE, ENOMEM) is an 'error' event on the server: with no listener it is an uncaught exception, and
 * the member stops with no stop sequence. The client port and the metrics port log it and keep serving
 * (issue 31, item 3; the e2e flood of a member under `ulimit -n`: test/e2e/process-faults.test.ts).
 */
import * as net from 'node:net';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { startGrpcServer } from '../../../src/api/grpc/server.js';
import { createLogger } from '../../../src/config/log.js';
import { startMetricsHttp } from '../../../src/metrics/metrics-http.js';
import { Registry } from '../../../src/metrics/metrics.js';
import { FakeApi } from './fake-api.js';

const lines: Record<string, unknown>[] = [];
const logger = createLogger({ sink: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) });
const closing: Array<() => unknown> = [];
afterAll(async () => {
  for (const close of closing) await close();
});

/** The net.Server each start binds (the listeners are not part of any API). */
async function listenersOf(start: () => Promise<unknown>): Promise<net.Server[]> {
  const listen = vi.spyOn(net.Server.prototype, 'listen');
  try {
    await start();
    return listen.mock.contexts as net.Server[];
  } finally {
    listen.mockRestore();
  }
}

function acceptError(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`accept ${code}`), { code, errno: -24, syscall: 'accept' });
}

describe('accept errors on a listening socket', () => {
  it('the client port logs them (at 1, 2, 4, … of them) and keeps serving', async () => {
    const api = await FakeApi.create();
    let port = 0;
    const listeners = await listenersOf(async () => {
      const server = await startGrpcServer({ api, listenUrls: ['http://127.0.0.1:0'], logger });
      port = server.ports[0]!;
      closing.push(() => server.close(100), () => api.close());
    });
    expect(listeners).toHaveLength(1);
    for (let i = 0; i < 5; i++) listeners[0]!.emit('error', acceptError('EMFILE'));
    const logged = lines.filter((l) => String(l.msg).startsWith('client listener') && l.error === 'EMFILE');
    expect(logged.map((l) => l.times)).toEqual([1, 2, 4]);
    const res = await fetch(`http://127.0.0.1:${port}/health`);
    expect(res.status).toBeLessThan(500);
  });

  it('the metrics port logs them and keeps serving', async () => {
    let url = '';
    const listeners = await listenersOf(async () => {
      const http = await startMetricsHttp({ listenUrls: ['http://127.0.0.1:0'], registry: new Registry(), health: async () => ({ health: true, reason: '' }), logger });
      url = http.urls[0]!;
      closing.push(() => http.close());
    });
    expect(listeners).toHaveLength(1);
    listeners[0]!.emit('error', acceptError('ENFILE'));
    expect(lines.some((l) => String(l.msg).startsWith('metrics listener') && l.error === 'ENFILE')).toBe(true);
    expect((await fetch(`${url}/metrics`)).status).toBe(200);
  });
});
