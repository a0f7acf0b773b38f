/**
 * One Watch stream of one side: the responses it received, grouped per watch id, and what each watcher asked
 * for (the sync step writes to its key). Responses are kept as JSON (protobufjs' toJSON: camelCase, int64 as
 * strings, bytes as base64).
 */
import type * as grpc from '@grpc/grpc-js';
import type { Wire } from '../../../src/api/grpc/proto.js';

type JsonObj = Record<string, unknown>;

export interface WatcherInfo {
  id: string;
  key: string;
  rangeEnd: string;
  startRevision: number;
  noPut: boolean;
  noDelete: boolean;
  /** Its start was below the compact revision when it was created: it is to be canceled. */
  belowCompaction: boolean;
  canceled: boolean;
  /** Highest event revision received. */
  seen: number;
}

export class WatchConn {
  readonly responses: JsonObj[] = [];
  readonly watchers = new Map<string, WatcherInfo>();
  #pending: Omit<WatcherInfo, 'id' | 'canceled' | 'seen'>[] = [];
  #waiters: (() => void)[] = [];
  #failure: string | undefined;

  constructor(readonly stream: grpc.ClientDuplexStream<Wire, Wire>) {
    stream.on('data', (m: Wire) => this.#receive(JSON.parse(JSON.stringify(m)) as JsonObj));
    stream.on('error', (err: Error) => {
      this.#failure = err.message;
      this.#wake();
    });
  }

  create(req: JsonObj, info: Omit<WatcherInfo, 'id' | 'canceled' | 'seen'>): void {
    this.#pending.push(info);
    this.stream.write({ createRequest: req });
  }

  #receive(r: JsonObj): void {
    this.responses.push(r);
    const id = String(r.watchId ?? '0');
    if (r.created === true) {
      const info = this.#pending.shift();
      // created+canceled is a refused create (an empty range, a duplicate id): nothing to follow.
      if (info !== undefined && r.canceled !== true && !this.watchers.has(id)) this.watchers.set(id, { ...info, id, canceled: false, seen: 0 });
    }
    // A create refused outright (a duplicate client-chosen id) is answered canceled without created.
    else if (r.canceled === true && !this.watchers.has(id)) this.#pending.shift();
    const w = this.watchers.get(id);
    if (w !== undefined) {
      if (r.canceled === true) w.canceled = true;
      for (const ev of (r.events as { kv: { modRevision: string } }[] | undefined) ?? []) w.seen = Math.max(w.seen, Number(ev.kv.modRevision));
    }
    this.#wake();
  }

  #wake(): void {
    for (const w of this.#waiters.splice(0)) w();
  }

  /** Waits until `done()` holds, or `ms` pass: whether it held (a stream error ends the wait too). */
  async until(done: (responses: JsonObj[]) => boolean, ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (!done(this.responses)) {
      if (this.#failure !== undefined || Date.now() >= deadline) return false;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.max(1, deadline - Date.now()));
        this.#waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    return true;
  }

  get failure(): string | undefined {
    return this.#failure;
  }

  close(): void {
    this.stream.end();
    this.stream.cancel();
  }
}
