/**
 * A Watch stream whose answers are backed up stops reading its requests (issue 34), on both gRPC servers: a
 * client that creates watchers (each answered 'created') and never reads the answers is held by HTTP/2 flow
 * control once the server's send buffer is full, instead of the server reading on and queueing answers
 * without bound. Raw HTTP/2 client, so the test controls exactly what is read (nothing).
 */
import * as http2 from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { frameMessage } from '../../../src/api/h2grpc/message-frames.js';
import { startNodeHarness, type NodeHarness } from './node-harness.js';

/** WatchRequest{create_request: {key: "k"}}: field 1 holding field 1. */
const createRequest = frameMessage(Buffer.from([0x0a, 0x03, 0x0a, 0x01, 0x6b]));
const requests = 20_000; // 200 KB of requests, several times that of answers

describe.each(['h2', 'grpc-js'] as const)('Watch backpressure on %s', (grpcServer) => {
  let h: NodeHarness;
  beforeAll(async () => {
    h = await startNodeHarness({ grpcServer });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('stops reading requests while the client reads no answers, and reads them all once it does', async () => {
    const session = http2.connect(h.url);
    session.on('error', () => {});
    const req = session.request({ ':method': 'POST', ':path': '/etcdserverpb.Watch/Watch', 'content-type': 'application/grpc', te: 'trailers' });
    req.on('error', () => {});
    req.pause(); // never read the answers (yet)
    const batch = Buffer.concat(Array.from({ length: 1000 }, () => createRequest));
    for (let i = 0; i < requests / 1000; i++) req.write(batch);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    // Held: most of the requests are still in the client's buffer, the server took only a window's worth.
    expect(req.writableLength).toBeGreaterThan(100_000);
    // Reading the answers lets everything through: every request is answered.
    let answered = 0;
    let pending = Buffer.alloc(0);
    const all = new Promise<void>((resolve) => {
      req.on('data', (chunk: Buffer) => {
        pending = Buffer.concat([pending, chunk]);
        while (pending.length >= 5 && pending.length >= 5 + pending.readUInt32BE(1)) {
          pending = pending.subarray(5 + pending.readUInt32BE(1));
          if (++answered === requests) resolve();
        }
      });
    });
    req.resume();
    await all;
    expect(req.writableLength).toBe(0);
    req.close();
    session.close();
  }, 30_000);
});
