/**
 * Raw gRPC clients from our own proto definitions, for what the etcd3 client cannot show: exact status codes
 * and messages, a token of the test's choosing (or none) on each call, bidirectional streams.
 */
import * as grpc from '@grpc/grpc-js';
import { serviceDefinition, type Wire } from '../../src/api/grpc/proto.js';

export type Unary = (req: Wire, token?: string) => Promise<Wire>;
export type RawService = Record<string, Unary> & { stream(method: string, token?: string): grpc.ClientDuplexStream<Wire, Wire> };

/** A client of one service on 127.0.0.1:`port`, added to `opened` for the caller to close. */
export function rawService(port: number, service: string, opened: grpc.Client[]): RawService {
  const Ctor = grpc.makeGenericClientConstructor(serviceDefinition(service), service);
  const c = new Ctor(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as grpc.Client & Record<string, Function>;
  opened.push(c);
  const md = (token?: string): grpc.Metadata => {
    const m = new grpc.Metadata();
    if (token !== undefined) m.set('token', token);
    return m;
  };
  return new Proxy({} as never, {
    get: (_t, method: string) => {
      if (method === 'stream') return (name: string, token?: string) => c[name]!.call(c, md(token));
      return (req: Wire, token?: string) =>
        new Promise((resolve, reject) => c[method]!.call(c, req, md(token), (err: Error | null, res: Wire) => (err ? reject(err) : resolve(res))));
    },
  });
}
