/**
 * What an e2e file opens and must release once its tests end: etcd3 clients, raw gRPC clients, HTTP/2
 * sessions and temp dirs, plus every server it started (killAll). Call once at the top of the file.
 */
import type * as http2 from 'node:http2';
import type * as grpc from '@grpc/grpc-js';
import type { Etcd3 } from 'etcd3';
import { afterAll } from 'vitest';
import { killAll, removeDir } from './harness.js';

export interface Released {
  clients: Etcd3[];
  raws: grpc.Client[];
  sessions: http2.ClientHttp2Session[];
  dirs: string[];
}

export function releaseAfterAll(): Released {
  const held: Released = { clients: [], raws: [], sessions: [], dirs: [] };
  afterAll(async () => {
    for (const c of held.clients) c.close();
    for (const r of held.raws) r.close();
    for (const s of held.sessions) s.destroy();
    await killAll();
    for (const d of held.dirs) removeDir(d);
  });
  return held;
}
