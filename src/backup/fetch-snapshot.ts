/**
 * `etcdctl snapshot save` as a library: stream Maintenance.Snapshot from one endpoint (ours or a real etcd)
 * into `path.part`, check what etcdctl checks (size % 512 == 32: pages then their SHA-256) and the digest
 * itself, then give it its name whole (fsync, rename, directory fsync: wal/atomic-file.ts). Nothing is held
 * in memory beyond one message.
 */
import { readFile } from 'node:fs/promises';
import * as grpc from '@grpc/grpc-js';
import { serviceDefinition, type Wire } from '../api/grpc/proto.js';
import type { Progress } from './progress.js';
import { hasHashTrailer, verifySnapshotHash } from '../etcd-db/etcd-db-file.js';
import { RestoreError } from './import.js';
import { createAtomicFile } from '../wal/atomic-file.js';
import { NodeFsPort } from '../wal/fs-port.js';

export interface EndpointTls {
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  /** etcdctl --insecure-skip-tls-verify: accept any server certificate. */
  insecureSkipVerify?: boolean;
}

/** etcdctl --user / --password: authenticate first, then send the token with the Snapshot call. */
export interface EndpointUser {
  name: string;
  password: string;
}

export interface FetchOptions {
  tls?: EndpointTls;
  user?: EndpointUser;
  progress?: Progress;
  /** Give up when no message arrives for this long (default 60 s). */
  idleTimeoutMs?: number;
}

/** "host:port", "http://host:port" or "https://host:port" → grpc target and whether TLS is used. */
function target(endpoint: string): { address: string; secure: boolean } {
  const m = /^(https?):\/\/([^/]+)\/?$/.exec(endpoint);
  if (m !== null) return { address: m[2]!, secure: m[1] === 'https' };
  return { address: endpoint, secure: false };
}

async function credentials(secure: boolean, tls: EndpointTls | undefined): Promise<grpc.ChannelCredentials> {
  if (!secure && tls?.caFile === undefined && tls?.certFile === undefined) return grpc.credentials.createInsecure();
  const read = (f: string | undefined): Promise<Buffer | null> => (f === undefined ? Promise.resolve(null) : readFile(f));
  const skip = tls?.insecureSkipVerify === true ? { rejectUnauthorized: false, checkServerIdentity: () => undefined } : {};
  return grpc.credentials.createSsl(await read(tls?.caFile), await read(tls?.keyFile), await read(tls?.certFile), skip);
}

/** Auth.Authenticate on the same channel: the token etcd expects in the `token` metadata of later calls. */
async function authenticate(address: string, creds: grpc.ChannelCredentials, user: EndpointUser): Promise<grpc.Metadata> {
  const Auth = grpc.makeGenericClientConstructor(serviceDefinition('etcdserverpb.Auth'), 'Auth');
  const client = new Auth(address, creds) as unknown as grpc.Client & {
    Authenticate(req: Wire, options: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res: Wire) => void): void;
  };
  try {
    const res = await new Promise<Wire>((resolve, reject) =>
      client.Authenticate({ name: user.name, password: user.password }, { deadline: Date.now() + 15_000 }, (err, r) => (err !== null ? reject(err) : resolve(r))),
    );
    const metadata = new grpc.Metadata();
    metadata.set('token', String(res.token ?? ''));
    return metadata;
  } finally {
    client.close();
  }
}

function toNumber(n: unknown): number {
  return n === undefined || n === null ? 0 : Number(String(n));
}

/** Resolves with the saved file's size (database plus trailer). */
export async function fetchSnapshot(endpoint: string, path: string, options: FetchOptions = {}): Promise<{ sizeBytes: number }> {
  const { address, secure } = target(endpoint);
  const Client = grpc.makeGenericClientConstructor(serviceDefinition('etcdserverpb.Maintenance'), 'Maintenance');
  const creds = await credentials(secure, options.tls);
  const metadata = options.user !== undefined
    ? await authenticate(address, creds, options.user).catch((err: unknown) => {
      throw new RestoreError(`authentication at ${endpoint} failed: ${err instanceof Error ? err.message : String(err)}`);
    })
    : new grpc.Metadata();
  const client = new Client(address, creds, { 'grpc.max_receive_message_length': 64 * 1024 * 1024 });
  const file = await createAtomicFile(new NodeFsPort(), path, { tmpPath: `${path}.part` });
  let received = 0;
  try {
    const call = (client as unknown as { Snapshot(req: Wire, metadata: grpc.Metadata): grpc.ClientReadableStream<Wire> }).Snapshot({}, metadata);
    const idleMs = options.idleTimeoutMs ?? 60_000;
    let timer: NodeJS.Timeout | undefined;
    const arm = (): void => {
      clearTimeout(timer);
      timer = setTimeout(() => call.cancel(), idleMs);
    };
    arm();
    try {
      for await (const msg of call as AsyncIterable<Wire>) {
        arm();
        const blob = msg.blob as Uint8Array | undefined;
        if (blob !== undefined && blob.length > 0) {
          await file.write(blob);
          received += blob.length;
        }
        if (options.progress !== undefined) {
          options.progress.total = received + toNumber(msg.remainingBytes);
          options.progress.update(received);
        }
      }
    } finally {
      clearTimeout(timer);
    }
  } catch (err) {
    await file.abort();
    throw new RestoreError(`snapshot from ${endpoint} failed: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    client.close();
  }
  options.progress?.done(received);
  try {
    if (!hasHashTrailer(received)) throw new RestoreError(`sha256 checksum not found [bytes: ${received}]`);
    await verifySnapshotHash(file.tmpPath);
    await file.commit();
  } catch (err) {
    await file.abort();
    throw err;
  }
  return { sizeBytes: received };
}
