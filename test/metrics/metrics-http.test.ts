import { afterAll, describe, expect, it } from 'vitest';
import { type HealthResult, type MetricsHttp, startMetricsHttp } from '../../src/metrics/metrics-http.js';
import { Registry } from '../../src/metrics/metrics.js';

describe('metrics and health HTTP', () => {
  let state: HealthResult = { health: true, reason: '' };
  let ready: HealthResult = { health: false, reason: 'not caught up' };
  const registry = new Registry();
  registry.gauge({ name: 'etcd_server_is_leader', help: 'Whether or not this member is a leader.' }).set(1);
  let server: MetricsHttp | undefined;
  const start = async (): Promise<string> => {
    server ??= await startMetricsHttp({
      listenUrls: ['http://127.0.0.1:0'],
      registry,
      health: async () => state,
      ready: async () => ready,
      checkTimeoutMs: 200,
    });
    return server.urls[0] as string;
  };
  afterAll(async () => server?.close());

  it('serves /metrics in the Prometheus text format', async () => {
    const res = await fetch(`${await start()}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(await res.text()).toContain('\netcd_server_is_leader 1\n');
  });

  it('serves /health in etcd JSON, 503 when unhealthy or the check hangs', async () => {
    const base = await start();
    let res = await fetch(`${base}/health`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('{"health":"true","reason":""}\n');
    state = { health: false, reason: 'RAFT NO LEADER' };
    res = await fetch(`${base}/health`);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ health: 'false', reason: 'RAFT NO LEADER' });
    const saved = state;
    const hang = new Promise<HealthResult>(() => {});
    await server?.close();
    server = await startMetricsHttp({ listenUrls: ['http://127.0.0.1:0'], registry, health: () => hang, checkTimeoutMs: 100 });
    res = await fetch(`${server.urls[0]}/health`);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ health: 'false', reason: 'health check timed out' });
    await server.close();
    server = undefined;
    state = saved;
  });

  it('serves /livez and /readyz, 404 elsewhere, 405 for other methods, HEAD without a body', async () => {
    const base = await start();
    expect((await fetch(`${base}/livez`)).status).toBe(200);
    let res = await fetch(`${base}/readyz`);
    expect(res.status).toBe(503);
    expect(await res.text()).toBe('failed: not caught up\n');
    ready = { health: true, reason: '' };
    res = await fetch(`${base}/readyz`);
    expect([res.status, await res.text()]).toEqual([200, 'ok\n']);
    expect((await fetch(`${base}/nope`)).status).toBe(404);
    expect((await fetch(`${base}/metrics`, { method: 'POST' })).status).toBe(405);
    res = await fetch(`${base}/metrics`, { method: 'HEAD' });
    expect([res.status, await res.text()]).toEqual([200, '']);
  });

  it('rejects a bad metrics URL and an https URL without a certificate', async () => {
    await expect(startMetricsHttp({ listenUrls: ['unix://x:1'], registry, health: async () => state })).rejects.toThrow(/http or https/);
    await expect(startMetricsHttp({ listenUrls: ['https://127.0.0.1:0'], registry, health: async () => state })).rejects.toThrow(/no certificate/);
  });
});
