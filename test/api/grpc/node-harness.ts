/**
 * A real single-member node in this process (startEtcetera: Raft, WAL, LevelDB, the same gRPC server as the
 * CLI's) on 127.0.0.1, with raw clients for every service: what the service tests run against, so what they
 * check is what a client of the real server gets. FakeApi (fake-api.ts) is kept only where a test needs a
 * state the real node cannot be put in on demand (no leader, a learner, a fixed snapshot).
 */
import type * as grpc from '@grpc/grpc-js';
import { startEtcetera, type Etcetera } from '../../../src/index.js';
import { freePort, removeDir, tempDir } from '../../e2e/harness.js';
import { rawClient } from './harness.js';

export interface NodeHarness {
  member: Etcetera;
  url: string;
  endpoint: string;
  /** A raw grpc-js client for e.g. 'etcdserverpb.KV'. */
  client(service: string): grpc.Client & Record<string, Function>;
  close(): Promise<void>;
}

/** `grpcServer`: which gRPC server the client port runs (default: the member's default, h2). */
export async function startNodeHarness(o: { grpcServer?: 'grpc-js' | 'h2' } = {}): Promise<NodeHarness> {
  const dir = tempDir('grpc-node');
  const [clientPort, peerPort] = [await freePort(), await freePort()];
  const member = await startEtcetera({
    name: 'grpc',
    dataDir: dir,
    listenClientUrls: [`http://127.0.0.1:${clientPort}`],
    listenPeerUrls: [`http://127.0.0.1:${peerPort}`],
    storageProfile: 'ssd',
    unsafeNoFsync: true,
    ...(o.grpcServer !== undefined ? { grpcServer: o.grpcServer } : {}),
  });
  const endpoint = `127.0.0.1:${clientPort}`;
  const clients: grpc.Client[] = [];
  return {
    member,
    endpoint,
    url: `http://${endpoint}`,
    client: (service) => rawClient(endpoint, service, clients),
    async close() {
      for (const c of clients) c.close();
      await member.close();
      removeDir(dir);
    },
  };
}
