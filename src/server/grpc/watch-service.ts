/**
 * etcdserverpb.Watch (etcd's api/v3rpc/watch.go): one bidirectional stream carries many watchers. Requests
 * (create / cancel / progress) go to the core's WatchStream; its responses come back through a sink in
 * order, get their header, are fragmented when the watcher asked for it, and are written with backpressure:
 * when grpc-js' buffer is full the core is told to hold on until 'drain'.
 */
import type { ServerDuplexStream, UntypedServiceImplementation } from '@grpc/grpc-js';
import { grpcMessageBytesMax } from '../../base/limits.js';
import type { EtcdApi, WatchCreate, WatchOut, WatchStream } from '../api.js';
import { checkLeader, failStream, requestContext } from './call.js';
import { encodeEvent, encodeHeader, i64, n64, num } from './codec.js';
import type { LeaderStreams } from './leader-streams.js';
import { messageType } from './proto.js';
import type { Wire } from './proto.js';

const filterNoPut = 0;
const filterNoDelete = 1;

export function decodeWatchCreate(m: Wire): WatchCreate {
  const filters = m.filters as number[];
  return {
    watchId: num(m.watchId),
    // etcd: an empty key means "\0", so with range_end "\0" a watch covers every key.
    key: m.key.length === 0 ? new Uint8Array([0]) : m.key,
    rangeEnd: m.rangeEnd,
    startRevision: Math.max(0, num(m.startRevision)),
    progressNotify: m.progressNotify,
    noPut: filters.includes(filterNoPut),
    noDelete: filters.includes(filterNoDelete),
    prevKv: m.prevKv,
  };
}

export function watchService(api: EtcdApi, streams: LeaderStreams): UntypedServiceImplementation {
  return { Watch: (call: ServerDuplexStream<Wire, Wire | Buffer>) => serveWatch(api, streams, call) };
}

function serveWatch(api: EtcdApi, streams: LeaderStreams, call: ServerDuplexStream<Wire, Wire | Buffer>): void {
  const ctx = requestContext(call);
  try {
    checkLeader(api, ctx);
  } catch (err) {
    failStream(call, err);
    return;
  }
  const writer = new WatchWriter(api, call);
  let closed = false;
  let core: WatchStream | undefined;
  const close = (err?: unknown): void => {
    if (closed) return;
    closed = true;
    untrack();
    core?.close();
    if (err !== undefined && !call.cancelled) failStream(call, err);
  };
  const untrack = streams.track(ctx, close);
  core = api.openWatchStream({ send: (out) => !closed && writer.write(out) }, ctx);
  const stream = core;
  call.on('drain', () => !closed && stream.resume());
  call.on('data', (m: Wire) => {
    if (closed) return;
    try {
      handleRequest(stream, writer, m);
    } catch (err) {
      close(err);
    }
  });
  // A client half-close does not end the watch in etcd: events keep flowing until the client cancels.
  call.on('cancelled', () => close());
  call.on('error', () => close());
}

function handleRequest(stream: WatchStream, writer: WatchWriter, m: Wire): void {
  switch (m.requestUnion as string | undefined) {
    case 'createRequest': {
      const create = m.createRequest as Wire;
      writer.expectCreate(create.fragment === true);
      stream.create(decodeWatchCreate(create));
      return;
    }
    case 'cancelRequest':
      stream.cancel(num((m.cancelRequest as Wire).watchId));
      return;
    case 'progressRequest':
      stream.requestProgress();
      return;
    default:
      return; // etcd ignores an empty WatchRequest
  }
}

const watchResponseType = (): ReturnType<typeof messageType> => messageType('etcdserverpb.WatchResponse');
const eventType = (): ReturnType<typeof messageType> => messageType('mvccpb.Event');

/**
 * Turns the core's WatchOut into wire responses. Creates are answered in request order (api.ts), so a FIFO of
 * pending `fragment` flags tells which watcher asked for fragmenting.
 */
class WatchWriter {
  readonly #api: EtcdApi;
  readonly #call: ServerDuplexStream<Wire, Wire | Buffer>;
  readonly #pendingFragment: boolean[] = [];
  readonly #fragmenting = new Set<number>();
  readonly #responseType = watchResponseType();

  constructor(api: EtcdApi, call: ServerDuplexStream<Wire, Wire | Buffer>) {
    this.#api = api;
    this.#call = call;
  }

  expectCreate(fragment: boolean): void {
    this.#pendingFragment.push(fragment);
  }

  /** Returns false when the transport is full (backpressure). */
  write(out: WatchOut): boolean {
    if (out.created) {
      const fragment = this.#pendingFragment.shift() ?? false;
      if (fragment && !out.canceled) this.#fragmenting.add(out.watchId);
    }
    if (out.canceled) this.#fragmenting.delete(out.watchId);
    const wire = this.#wire(out);
    if (out.events.length < 2 || !this.#fragmenting.has(out.watchId)) return this.#call.write(wire);
    const whole = Buffer.from(this.#responseType.encode(wire).finish());
    if (whole.length < grpcMessageBytesMax) return this.#call.write(whole);
    let more = true;
    for (const part of fragments(wire, grpcMessageBytesMax)) more = this.#call.write(part);
    return more;
  }

  #wire(out: WatchOut): Wire {
    return {
      header: encodeHeader(this.#api.header(out.revision)),
      watchId: i64(out.watchId),
      created: out.created || undefined,
      canceled: out.canceled || undefined,
      compactRevision: n64(out.compactRevision, 'compactRevision'),
      cancelReason: out.cancelReason || undefined,
      events: out.events.length === 0 ? undefined : out.events.map(encodeEvent),
    };
  }
}

/** Bytes an event adds to a WatchResponse: tag (1 byte, field 11), length varint, the event. */
function eventFieldBytes(event: Wire): number {
  const n = eventType().encode(event).len;
  return 1 + varintBytes(n) + n;
}

function varintBytes(n: number): number {
  let bytes = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 0x80);
    bytes++;
  }
  return bytes;
}

/**
 * etcd's sendFragments: consecutive responses with fragment=true except the last, each under `limitBytes`
 * unless a single event alone exceeds it. Every fragment repeats the header and watch id.
 */
export function fragments(wire: Wire, limitBytes: number): Wire[] {
  const events = wire.events as Wire[];
  const base = watchResponseType().encode({ ...wire, events: undefined, fragment: true }).len;
  const parts: Wire[] = [];
  let current: Wire[] = [];
  let size = base;
  for (const ev of events) {
    const bytes = eventFieldBytes(ev);
    if (current.length > 0 && size + bytes >= limitBytes) {
      parts.push({ ...wire, events: current, fragment: true });
      current = [];
      size = base;
    }
    current.push(ev);
    size += bytes;
  }
  parts.push({ ...wire, events: current, fragment: undefined });
  return parts;
}
