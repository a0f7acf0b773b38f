/**
 * etcdserverpb.Watch (etcd's api/v3rpc/watch.go): one bidirectional stream carries many watchers. Requests
 * (create / cancel / progress) go to the core's WatchStream; its responses (already fragmented by the hub
 * when a watcher asked for it) come back through a sink in order, get their header, and are written with
 * backpressure: when the call's buffer is full the core queues until 'drain', and the stream reads no more
 * requests until then.
 */
import type { ServerDuplexStream, UntypedServiceImplementation } from '@grpc/grpc-js';
import type { EtcdApi, WatchCreate, WatchOut, WatchStream } from '../../node/server-api.js';
import { failStream, openStream } from './call.js';
import { encodeEvent, encodeHeader, i64, n64, num } from './messages.js';
import { encodeWatchResponse } from './fast-encode.js';
import type { LeaderStreams } from './leader-streams.js';
import type { Wire } from './proto.js';

/** Empty key ("\0"), negative start revisions and unknown filters are the core's to judge, as in etcd's mvcc. */
export function decodeWatchCreate(m: Wire): WatchCreate {
  return {
    watchId: num(m.watchId),
    key: m.key,
    rangeEnd: m.rangeEnd,
    startRevision: num(m.startRevision),
    progressNotify: m.progressNotify,
    filters: m.filters as WatchCreate['filters'],
    prevKv: m.prevKv,
    fragment: m.fragment,
  };
}

export function watchService(api: EtcdApi, streams: LeaderStreams): UntypedServiceImplementation {
  return { Watch: (call: ServerDuplexStream<Wire, Wire | Buffer>) => serveWatch(api, streams, call) };
}

function serveWatch(api: EtcdApi, streams: LeaderStreams, call: ServerDuplexStream<Wire, Wire | Buffer>): void {
  const ctx = openStream(api, call);
  if (ctx === undefined) return;
  let closed = false;
  let core: WatchStream | undefined;
  const close = (err?: unknown): void => {
    if (closed) return;
    closed = true;
    untrack();
    ctx.finish();
    core?.close();
    if (err !== undefined && !call.cancelled) failStream(call, err);
  };
  const untrack = streams.track(ctx, close);
  try {
    core = api.openWatchStream(
      {
        send: (out) => {
          if (closed) return false;
          const more = call.write(encodeWatchResponse(out, api.header(out.revision)));
          // Answers backed up: read no more requests (each may add answers) until they drain, so a client
          // that does not read is held by HTTP/2 flow control instead of growing our queue (issue 34).
          if (!more) call.pause();
          return more;
        },
      },
      ctx,
    );
  } catch (err) {
    close(err);
    return;
  }
  const stream = core;
  call.on('drain', () => {
    if (closed) return;
    call.resume();
    stream.resume();
  });
  call.on('data', (m: Wire) => {
    if (closed) return;
    try {
      handleRequest(stream, m);
    } catch (err) {
      close(err);
    }
  });
  // A client half-close does not end the watch in etcd: events keep flowing until the client cancels.
  call.on('cancelled', () => close());
  call.on('error', () => close());
}

function handleRequest(stream: WatchStream, m: Wire): void {
  switch (m.requestUnion as string | undefined) {
    case 'createRequest':
      stream.create(decodeWatchCreate(m.createRequest));
      return;
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

/** The protobufjs-shaped response (reference for fast-encode.ts, which the stream uses). */
export function watchResponseWire(api: EtcdApi, out: WatchOut): Wire {
  return {
    header: encodeHeader(api.header(out.revision)),
    watchId: i64(out.watchId),
    created: out.created || undefined,
    canceled: out.canceled || undefined,
    compactRevision: n64(out.compactRevision, 'compactRevision'),
    cancelReason: out.cancelReason || undefined,
    fragment: out.fragment || undefined,
    events: out.events.length === 0 ? undefined : out.events.map(encodeEvent),
  };
}
