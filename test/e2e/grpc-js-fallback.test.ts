/**
 * The gRPC server the client port runs (issue 34): our own on our own HTTP/2 frames by default, the same on
 * node:http2 with `--grpc-server h2`, grpc-js' with `--grpc-server grpc-js`. etcdctl (a Go client) against
 * each, so the two fallbacks stay tested now that the default suites run on frames. Which server answered is
 * told by the response headers: grpc-js offers compression (`grpc-accept-encoding: deflate,gzip`), node:http2
 * adds a `date` header to every response, our frames send neither.
 */
import * as http2 from 'node:http2';
import { afterAll, describe, expect, it } from 'vitest';
import { etcdctl, haveEtcdctl, killAll, startServer, type ServerProcess } from './harness.js';

/** The response headers of one raw Status call (an empty request is a valid StatusRequest). */
async function statusHeaders(port: number): Promise<http2.IncomingHttpHeaders> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on('error', () => {});
  try {
    return await new Promise((resolve, reject) => {
      const req = session.request({ ':method': 'POST', ':path': '/etcdserverpb.Maintenance/Status', 'content-type': 'application/grpc', te: 'trailers' });
      req.on('response', resolve);
      req.on('error', reject);
      req.resume();
      req.end(Buffer.from([0, 0, 0, 0, 0]));
    });
  } finally {
    session.close();
  }
}

describe.runIf(haveEtcdctl())('the client port on either gRPC server', () => {
  afterAll(killAll);

  async function exercise(s: ServerProcess): Promise<void> {
    const ctl = (...args: string[]) => etcdctl(s.clientUrl, args);
    expect((await ctl('put', 'k', 'v1')).stdout.trim()).toBe('OK');
    const rev = JSON.parse((await ctl('put', 'k', 'v2', '-w', 'json')).stdout).header.revision as number;
    expect((await ctl('get', 'k', '--print-value-only')).stdout).toBe('v2\n');
    expect((await etcdctl(s.clientUrl, ['watch', 'k', `--rev=${rev - 1}`], 3000)).stdout).toContain('PUT\nk\nv1\nPUT\nk\nv2');
    const id = /lease ([0-9a-f]+) granted/.exec((await ctl('lease', 'grant', '60')).stdout)![1]!;
    expect((await ctl('lease', 'keep-alive', '--once', id)).stdout).toContain(`lease ${id} keepalived`);
    expect((await ctl('get', 'k', '--rev=1')).stderr).toBe('');
    expect((await ctl('endpoint', 'status')).stdout).toContain(s.clientUrl.replace(/^http:\/\//, ''));
  }

  it('serves etcdctl on --grpc-server grpc-js (the fallback)', async () => {
    const s = await startServer({ name: 'fallback', args: ['--cluster-init', '--grpc-server', 'grpc-js'], env: { ETCETERA_GRPC_SERVER: '' } });
    expect((await statusHeaders(s.clientPort))['grpc-accept-encoding']).toMatch(/gzip/);
    await exercise(s);
  });

  it('serves etcdctl on --grpc-server h2 (our server on node:http2)', async () => {
    const s = await startServer({ name: 'h2', args: ['--cluster-init', '--grpc-server', 'h2'], env: { ETCETERA_GRPC_SERVER: '' } });
    const headers = await statusHeaders(s.clientPort);
    expect(headers['grpc-accept-encoding']).toBeUndefined();
    expect(headers['date']).toBeDefined();
    await exercise(s);
  });

  it('serves etcdctl on our own HTTP/2 frames when nothing says which (the default)', async () => {
    const s = await startServer({ name: 'default', args: ['--cluster-init'], env: { ETCETERA_GRPC_SERVER: '' } });
    const headers = await statusHeaders(s.clientPort);
    expect(headers['grpc-accept-encoding']).toBeUndefined();
    expect(headers['date']).toBeUndefined();
    await exercise(s);
  });
});
