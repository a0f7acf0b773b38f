/**
 * A raw etcd v3 client on @grpc/grpc-js with the static codec of wire.ts: requests are prebuilt Buffers,
 * responses are decoded only as far as the benchmark needs. One `RawClient` is one HTTP/2 connection (a local
 * subchannel pool, so two clients to the same endpoint do not silently share a connection).
 */
import * as grpc from '@grpc/grpc-js';
import {
  decodeHeaderOnly, decodeRange, decodeStatus, decodeWatch, emptyMessage,
  type Header, type RangeResult, type StatusResult, type WatchResult,
} from './wire.js';

const identity = (b: Buffer): Buffer => b;

export class RpcError extends Error {
  readonly code: number;
  constructor(code: number, details: string) {
    super(`${grpc.status[code] ?? code}: ${details}`);
    this.code = code;
  }
}

export class RawClient {
  readonly endpoint: string;
  #client: grpc.Client;

  constructor(endpoint: string) {
    this.endpoint = endpoint;
    const target = endpoint.replace(/^https?:\/\//, '');
    this.#client = new grpc.Client(target, grpc.credentials.createInsecure(), {
      'grpc.use_local_subchannel_pool': 1,
      'grpc.max_receive_message_length': 64 * 1024 * 1024,
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 1000,
    });
  }

  /** A unary call with a prebuilt request; resolves with the raw response bytes. */
  unary(path: string, request: Buffer, timeoutMs: number): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      this.#client.makeUnaryRequest<Buffer, Buffer>(
        path, identity, identity, request, { deadline: Date.now() + timeoutMs },
        (err, res) => {
          if (err) reject(new RpcError(err.code, err.details));
          else resolve(res ?? emptyMessage);
        },
      );
    });
  }

  async put(request: Buffer, timeoutMs: number): Promise<Header> {
    return decodeHeaderOnly(await this.unary('/etcdserverpb.KV/Put', request, timeoutMs));
  }

  async range(request: Buffer, timeoutMs: number): Promise<RangeResult> {
    return decodeRange(await this.unary('/etcdserverpb.KV/Range', request, timeoutMs));
  }

  async txn(request: Buffer, timeoutMs: number): Promise<Header> {
    return decodeHeaderOnly(await this.unary('/etcdserverpb.KV/Txn', request, timeoutMs));
  }

  async status(timeoutMs: number): Promise<StatusResult> {
    return decodeStatus(await this.unary('/etcdserverpb.Maintenance/Status', emptyMessage, timeoutMs));
  }

  /** Opens a Watch stream; `onResponse` sees every decoded response. */
  watchStream(onResponse: (r: WatchResult) => void, onError: (e: Error) => void): WatchStream {
    const call = this.#client.makeBidiStreamRequest<Buffer, Buffer>('/etcdserverpb.Watch/Watch', identity, identity);
    call.on('data', (buf: Buffer) => onResponse(decodeWatch(buf)));
    call.on('error', (e: Error) => {
      if ((e as { code?: number }).code !== grpc.status.CANCELLED) onError(e);
    });
    return { send: (b) => void call.write(b), close: () => call.cancel() };
  }

  close(): void {
    this.#client.close();
  }
}

export interface WatchStream {
  send(request: Buffer): void;
  close(): void;
}
