/**
 * The small adapters between etcd's options and the member's parts, kept out of main/member.ts (the composition
 * root) so its hooks stay one line each: peer TLS with the shared TLS policy, the gRPC server's limits,
 * --unsafe-no-fsync's file system, and the initial corruption check's view of this member.
 */
import type { Backend } from '../mvcc/backend.js';
import { defragSecondsBuckets, timeBackendCommits, trackDefragments } from '../metrics/backend-timing.js';
import { type GrpcMetrics, registerGrpcMetrics } from '../metrics/grpc-metrics.js';
import { registerBackendCommitHistogram } from '../metrics/member-metrics.js';
import type { Registry } from '../metrics/metrics.js';
import { NodeFsPort, type FilePort, type FsPort } from '../wal/fs-port.js';
import type { MemberOptions } from '../config/member-options.js';
import type { ServerState } from '../node/apply/server-state.js';
import type { GrpcServerOptions } from '../api/grpc/server.js';
import type { InitialCheckHost } from '../node/corruption/initial-corrupt-check.js';
import type { HashAt } from '../node/corruption/corruption-check.js';
import { peerRefusal } from '../node/errors.js';
import type { PeerTransport } from '../peer/transport.js';
import type { PeerTlsOptions } from '../peer/types.js';

/** The metrics measured around the backend and the gRPC server; returns the gRPC server's. */
export function instrumentMember(registry: Registry, backend: Backend): GrpcMetrics {
  timeBackendCommits(backend, registerBackendCommitHistogram(registry));
  trackDefragments(
    backend,
    registry.gauge({ name: 'etcd_disk_defrag_inflight', help: 'Whether or not defrag is active on the member. 1 means active, 0 means not.' }),
    registry.histogram({ name: 'etcd_disk_backend_defrag_duration_seconds', help: 'The latency distribution of backend defragmentation.', buckets: defragSecondsBuckets }),
  );
  return registerGrpcMetrics(registry);
}

export function peerTlsOf(o: MemberOptions): PeerTlsOptions | undefined {
  if (o.peerTls === undefined) return undefined;
  return { ...o.peerTls, ...(o.tlsPolicy !== undefined ? { policy: o.tlsPolicy } : {}) };
}

export function grpcOptionsOf(o: MemberOptions): Pick<GrpcServerOptions, 'limits' | 'tlsPolicy' | 'logger' | 'grpcServer'> {
  return {
    ...(o.grpcServer !== undefined ? { grpcServer: o.grpcServer } : {}),
    ...(o.grpcLimits !== undefined ? { limits: o.grpcLimits } : {}),
    ...(o.tlsPolicy !== undefined ? { tlsPolicy: o.tlsPolicy } : {}),
    logger: o.logger.child({ component: 'grpc' }),
  };
}

/** etcd --unsafe-no-fsync: the real file system with every sync a no-op (file and directory). */
export function noFsyncPort(inner: FsPort = new NodeFsPort()): FsPort {
  const wrap = (f: FilePort): FilePort => ({
    get path() {
      return f.path;
    },
    write: (data, length, position) => f.write(data, length, position),
    ...(f.writeNow !== undefined ? { writeNow: (data: Uint8Array, length: number, position: number) => f.writeNow!(data, length, position) } : {}),
    read: (into, length, position) => f.read(into, length, position),
    datasync: async () => {},
    sync: async () => {},
    truncate: (length) => f.truncate(length),
    size: () => f.size(),
    close: () => f.close(),
  });
  return {
    mkdirp: (dir) => inner.mkdirp(dir),
    list: (dir) => inner.list(dir),
    open: async (path, mode, fileMode) => wrap(await inner.open(path, mode, fileMode)),
    readFile: (path) => inner.readFile(path),
    rename: (from, to) => inner.rename(from, to),
    unlink: (path) => inner.unlink(path),
    syncDir: async () => {},
    lock: (dir) => inner.lock(dir),
  };
}

/** Peers are asked over the peer transport (it is started, Raft is not yet). */
export function initialCheckHost(memberId: bigint, state: ServerState, transport: PeerTransport, o: MemberOptions): InitialCheckHost {
  const timeoutMs = 5000 + 2 * o.electionTimeoutMs; // etcd: ReqTimeout()
  return {
    memberId,
    members: state.membership.list(),
    localHash: async () => {
      const h = await state.store.hash();
      return { hash: h.hash, compactRevision: h.compactRevision, revision: h.hashRevision };
    },
    peerHash: async (url, revision) => {
      const r = await transport.request(url, { method: 'hashKV', payload: { revision } }, { timeoutMs });
      if (r.ok) return r.payload as HashAt;
      throw peerRefusal(r);
    },
    logger: o.logger,
  };
}
