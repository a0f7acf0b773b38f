/** Starts a gRPC server over a FakeApi on 127.0.0.1 (free port) and gives raw clients for every service. */
import * as grpc from '@grpc/grpc-js';
import { serviceDefinition } from '../../../src/api/grpc/proto.js';
import { startGrpcServer, type GrpcServerHandle, type GrpcTlsOptions } from '../../../src/api/grpc/server.js';
import { FakeApi } from './fake-api.js';

export interface Harness {
  api: FakeApi;
  server: GrpcServerHandle;
  url: string;
  endpoint: string;
  /** A raw grpc-js client for e.g. 'etcdserverpb.KV'. */
  client(service: string): grpc.Client & Record<string, Function>;
  close(): Promise<void>;
}

export async function startHarness(options: { tls?: GrpcTlsOptions; leaderCheckIntervalMs?: number } = {}): Promise<Harness> {
  const api = await FakeApi.create();
  const scheme = options.tls ? 'https' : 'http';
  const server = await startGrpcServer({
    api,
    listenUrls: [`${scheme}://127.0.0.1:0`],
    ...(options.tls ? { tls: options.tls } : {}),
    ...(options.leaderCheckIntervalMs ? { leaderCheckIntervalMs: options.leaderCheckIntervalMs } : {}),
  });
  const endpoint = `127.0.0.1:${server.ports[0]}`;
  const clients: grpc.Client[] = [];
  return {
    api,
    server,
    endpoint,
    url: `${scheme}://${endpoint}`,
    client: (service) => rawClient(endpoint, service, clients),
    async close() {
      for (const c of clients) c.close();
      api.close();
      await server.close(200);
    },
  };
}

/** A raw grpc-js client of `service` (e.g. 'etcdserverpb.KV') on `endpoint`, added to `opened` for closing. */
export function rawClient(endpoint: string, service: string, opened: grpc.Client[]): grpc.Client & Record<string, Function> {
  const Ctor = grpc.makeGenericClientConstructor(serviceDefinition(service), service);
  const c = new Ctor(endpoint, grpc.credentials.createInsecure()) as grpc.Client & Record<string, Function>;
  opened.push(c);
  return c;
}

/** Promisified unary call on a raw client. */
export function call<T = Record<string, unknown>>(
  client: Record<string, Function>,
  method: string,
  req: Record<string, unknown>,
  metadata = new grpc.Metadata(),
): Promise<T> {
  return new Promise((resolve, reject) => {
    client[method]!(req, metadata, (err: grpc.ServiceError | null, res: T) => (err ? reject(err) : resolve(res)));
  });
}

export const b = (s: string): Buffer => Buffer.from(s);

/** The status a call failed with; throws if it did not fail. */
export async function failedStatus(p: Promise<unknown>): Promise<{ code: number; details: string }> {
  try {
    await p;
  } catch (err) {
    const e = err as grpc.ServiceError;
    return { code: e.code, details: e.details };
  }
  throw new Error('expected the call to fail');
}
