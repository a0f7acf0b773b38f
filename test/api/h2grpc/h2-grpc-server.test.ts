/**
 * Our two gRPC servers on their own (on node:http2, and on our own HTTP/2 frames), each with a test KV service:
 * what grpc-js' server does for our services, checked with a grpc-js client and with raw HTTP/2 requests
 * (statuses, trailers-only answers, metadata, deadlines, cancellation, limits, compression refused,
 * backpressure, keepalive pings, GOAWAY on close). Every test runs against both servers.
 */
import * as http2 from 'node:http2';
import * as net from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { H2GrpcServer } from '../../../src/api/h2grpc/h2-grpc-server.js';
import type { H2Call } from '../../../src/api/h2grpc/h2-call.js';
import { FramesGrpcServer } from '../../../src/api/h2frames/frames-grpc-server.js';
import type { FramesCall } from '../../../src/api/h2frames/frames-call.js';
import { serviceDefinition } from '../../../src/api/grpc/proto.js';
import { frameMessage } from '../../../src/api/h2grpc/message-frames.js';
import { failedStatus } from '../grpc/harness.js';

type AnyCall = H2Call | FramesCall;
type Handler = (call: AnyCall, callback: (err: unknown, value?: unknown) => void) => void;

/** Each test sets what the KV methods do. */
const behaviour: { put?: Handler; range?: Handler } = {};
/** How often the server stream waited for 'drain'. */
const seen = { drains: 0 };

const servers = [['H2GrpcServer', H2GrpcServer], ['FramesGrpcServer', FramesGrpcServer]] as const;
type ServerClass = (typeof servers)[number][1];
/** The server class of the suite running now. */
let Server: ServerClass = H2GrpcServer;

interface Running {
  server: H2GrpcServer | FramesGrpcServer;
  listener: net.Server;
  port: number;
}

async function start(options: ConstructorParameters<typeof H2GrpcServer>[0]): Promise<Running> {
  const server = new Server(options);
  // The server hands its handlers H2Calls; grpc-js' handler types do not know them.
  const impl = (handlers: Record<string, (call: AnyCall, cb: (err: unknown, value?: unknown) => void) => void>) =>
    handlers as unknown as grpc.UntypedServiceImplementation;
  server.addService(serviceDefinition('etcdserverpb.KV'), impl({
    Put: (call, cb) => behaviour.put!(call, cb),
    Range: (call, cb) => behaviour.range!(call, cb),
  }));
  server.addService(serviceDefinition('v3electionpb.Election'), impl({
    // Server stream: writes until told to stop, counting what the client's flow control held back.
    Observe: (call: AnyCall) => {
      let writes = 0;
      const pump = (): void => {
        while (writes < 2000) {
          writes++;
          if (!call.write({ kv: { key: Buffer.alloc(1024, writes % 256) } })) {
            seen.drains++;
            return void call.once('drain', pump);
          }
        }
        call.end();
      };
      pump();
    },
  }));
  const listener = net.createServer((socket) => server.inject(socket));
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  return { server, listener, port: (listener.address() as net.AddressInfo).port };
}

let r: Running;
let kv: grpc.Client & Record<string, Function>;

function put(req: Record<string, unknown>, metadata = new grpc.Metadata(), options: grpc.CallOptions = {}): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    kv.Put!(req, metadata, options, (err: grpc.ServiceError | null, res: Record<string, unknown>) => (err ? reject(err) : resolve(res)));
  });
}

const failure = failedStatus;

/** A raw HTTP/2 request: its response headers (or trailers-only headers) and trailers. */
function rawRequest(port: number, headers: http2.OutgoingHttpHeaders, body: Buffer): Promise<{ headers: http2.IncomingHttpHeaders; trailers: http2.IncomingHttpHeaders }> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on('error', () => {});
  return new Promise((resolve, reject) => {
    const req = session.request({ ':method': 'POST', 'content-type': 'application/grpc', te: 'trailers', ...headers });
    let response: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders = {};
    req.on('response', (h) => (response = h));
    req.on('trailers', (t) => (trailers = t));
    req.on('error', reject);
    req.resume();
    req.on('close', () => {
      session.close();
      resolve({ headers: response, trailers });
    });
    req.end(body);
  });
}

for (const [name, ServerClass] of servers) describe(name, () => {
beforeAll(async () => {
  Server = ServerClass;
  r = await start({ messageBytesMax: 1024 });
  const Ctor = grpc.makeGenericClientConstructor(serviceDefinition('etcdserverpb.KV'), 'KV');
  kv = new Ctor(`127.0.0.1:${r.port}`, grpc.credentials.createInsecure()) as grpc.Client & Record<string, Function>;
});
afterAll(async () => {
  kv?.close();
  r?.listener.close();
  await r?.server.close(100);
});

describe('calls', () => {
  it('serves a unary call with the request, its metadata (text and -bin) and the response', async () => {
    behaviour.put = (call, cb) => {
      const bin = call.metadata.get('blob-bin')[0] as Buffer;
      cb(null, { header: { revision: Number(call.metadata.get('token')[0]) + bin.length }, prevKv: { key: (call.request as { key: Buffer }).key } });
    };
    const md = new grpc.Metadata();
    md.set('token', '40');
    md.set('blob-bin', Buffer.from([1, 2]));
    const res = (await put({ key: Buffer.from('k') }, md)) as { header: { revision: { toString(): string } }; prevKv: { key: Buffer } };
    expect(String(res.header.revision)).toBe('42');
    expect(res.prevKv.key.toString()).toBe('k');
  });

  it("answers a handler's error as its status, the message percent-encoded on the wire and decoded by the client", async () => {
    behaviour.put = (_call, cb) => cb({ code: grpc.status.FAILED_PRECONDITION, details: 'etcdserver: 100% naïve' });
    expect(await failure(put({ key: Buffer.from('k') }))).toEqual({ code: grpc.status.FAILED_PRECONDITION, details: 'etcdserver: 100% naïve' });
    const raw = await rawRequest(r.port, { ':path': '/etcdserverpb.KV/Put' }, frameMessage(Buffer.alloc(0)));
    // Trailers-only: the status comes in the response headers.
    expect(raw.headers['grpc-status']).toBe(String(grpc.status.FAILED_PRECONDITION));
    expect(raw.headers['grpc-message']).toBe('etcdserver: 100%25 na%C3%AFve');
  });

  it('answers an unknown method UNIMPLEMENTED, a non-gRPC request 415', async () => {
    const unknown = await rawRequest(r.port, { ':path': '/etcdserverpb.KV/Nope' }, frameMessage(Buffer.alloc(0)));
    expect(unknown.headers['grpc-status']).toBe(String(grpc.status.UNIMPLEMENTED));
    const plain = await rawRequest(r.port, { ':path': '/etcdserverpb.KV/Put', 'content-type': 'text/plain' }, Buffer.alloc(0));
    expect(plain.headers[':status']).toBe(415);
  });

  it('refuses a compressed request UNIMPLEMENTED, as grpc-go refuses an encoding it has no decompressor for', async () => {
    const res = await rawRequest(r.port, { ':path': '/etcdserverpb.KV/Put', 'grpc-encoding': 'gzip' }, frameMessage(Buffer.alloc(0)));
    expect(res.headers['grpc-status']).toBe(String(grpc.status.UNIMPLEMENTED));
    expect(res.headers['grpc-message']).toBe('grpc: Decompressor is not installed for grpc-encoding "gzip"');
  });

  it('refuses a message over the receive limit RESOURCE_EXHAUSTED, as grpc-js words it', async () => {
    behaviour.put = (_call, cb) => cb(null, {});
    const f = await failure(put({ key: Buffer.from('k'), value: Buffer.alloc(2000) }));
    expect(f.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(f.details).toMatch(/^Received message larger than max \(\d+ vs 1024\)$/);
  });

  it("ends a call past its grpc-timeout DEADLINE_EXCEEDED and tells the handler it was cancelled", async () => {
    const cancelled = new Promise<void>((resolve) => {
      behaviour.put = (call) => call.once('cancelled', () => resolve());
    });
    const f = await failure(put({ key: Buffer.from('k') }, new grpc.Metadata(), { deadline: Date.now() + 100 }));
    expect(f.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    await cancelled;
  });

  it('tells the handler when the client cancels', async () => {
    let handlerCall: AnyCall | undefined;
    let reached: () => void = () => {};
    const inHandler = new Promise<void>((resolve) => (reached = resolve));
    const cancelled = new Promise<void>((resolve) => {
      behaviour.put = (call) => {
        handlerCall = call;
        call.once('cancelled', () => resolve());
        reached();
      };
    });
    const c = kv.Put!({ key: Buffer.from('k') }, () => {}) as grpc.ClientUnaryCall;
    await inHandler; // cancel a call the server is handling, not one still on its way
    c.cancel();
    await cancelled;
    expect(handlerCall?.cancelled).toBe(true);
  });

  it('refuses an invalid grpc-timeout INTERNAL', async () => {
    const res = await rawRequest(r.port, { ':path': '/etcdserverpb.KV/Put', 'grpc-timeout': 'soon' }, frameMessage(Buffer.alloc(0)));
    expect(res.headers['grpc-status']).toBe(String(grpc.status.INTERNAL));
  });

  it('holds a server stream while the client does not read (write false, then drain) and delivers all of it', async () => {
    const Ctor = grpc.makeGenericClientConstructor(serviceDefinition('v3electionpb.Election'), 'Election');
    const election = new Ctor(`127.0.0.1:${r.port}`, grpc.credentials.createInsecure()) as grpc.Client & Record<string, Function>;
    const stream = election.Observe!({ name: Buffer.from('e') }) as grpc.ClientReadableStream<{ kv: { key: Buffer } }>;
    const drainsBefore = seen.drains;
    stream.pause();
    // Until the server's writes are held back by the paused client's flow control.
    while (seen.drains === drainsBefore) await new Promise((resolve) => setTimeout(resolve, 5));
    let n = 0;
    await new Promise<void>((resolve, reject) => {
      stream.on('data', (m) => {
        n++;
        if (m.kv.key[0] !== n % 256) reject(new Error(`message ${n} out of order`));
      });
      stream.on('error', reject);
      stream.on('end', () => resolve());
      stream.resume();
    });
    expect(n).toBe(2000);
    expect(seen.drains).toBeGreaterThan(0);
    election.close();
  });
});

describe('connections', () => {
  it('pings each connection every keepalive interval', async () => {
    const s = await start({ messageBytesMax: 1024, keepAliveIntervalMs: 50, keepAliveTimeoutMs: 1000 });
    const session = http2.connect(`http://127.0.0.1:${s.port}`);
    let pings = 0;
    const started = performance.now();
    await new Promise<void>((resolve) => session.on('ping', () => ++pings === 3 && resolve()));
    // Three pings at a 50 ms interval: not sooner than two intervals after the first could come.
    expect(performance.now() - started).toBeGreaterThanOrEqual(100);
    session.destroy();
    s.listener.close();
    await s.server.close(100);
  });

  /** A connection with one call open that the server never answers (the request is never half-closed). */
  async function openCall(port: number): Promise<{ session: http2.ClientHttp2Session; goAway: Promise<{ code: number; debug: string }> }> {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on('error', () => {});
    const goAway = new Promise<{ code: number; debug: string }>((resolve) =>
      session.on('goaway', (code, _last, data) => resolve({ code, debug: data?.toString() ?? '' })),
    );
    await new Promise<void>((resolve) => session.once('connect', () => resolve()));
    const req = session.request({ ':method': 'POST', ':path': '/etcdserverpb.KV/Range', 'content-type': 'application/grpc', te: 'trailers' });
    req.on('error', () => {});
    req.write(frameMessage(Buffer.alloc(0)));
    return { session, goAway };
  }

  /** One ping; settles on its answer, or after 500 ms (a connection going away may never answer). */
  const ping = (session: http2.ClientHttp2Session): Promise<void> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('ping unanswered')), 500);
      const done = (err: Error | null): void => {
        clearTimeout(timer);
        if (err) reject(err);
        else resolve();
      };
      if (!session.ping(done)) done(new Error('ping not sent'));
    });
  const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
  /** `p`, or 'no answer' after `ms` (a server that never sends GOAWAY fails the test fast). */
  const within = <T>(p: Promise<T>, ms: number): Promise<T | 'no answer'> => Promise.race([p, sleep(ms).then(() => 'no answer' as const)]);

  it('answers a client pinging more often than --grpc-keepalive-min-time GOAWAY ENHANCE_YOUR_CALM too_many_pings, as grpc-go', async () => {
    behaviour.range = () => {};
    const s = await start({ messageBytesMax: 1024, keepAliveMinTimeMs: 1000 });
    const { session, goAway } = await openCall(s.port);
    // The first ping is free; the next three come too soon: the third strike is one too many.
    for (let i = 0; i < 4; i++) await ping(session).catch(() => {});
    expect(await within(goAway, 5000)).toEqual({ code: http2.constants.NGHTTP2_ENHANCE_YOUR_CALM, debug: 'too_many_pings' });
    await new Promise<void>((resolve) => (session.closed ? resolve() : session.once('close', () => resolve())));
    s.listener.close();
    await s.server.close(100);
  });

  it('lets a client ping at the floor while a call is open, and counts any repeated ping without one (PermitWithoutStream false)', async () => {
    behaviour.range = () => {};
    const s = await start({ messageBytesMax: 1024, keepAliveMinTimeMs: 60 });
    const { session } = await openCall(s.port);
    let goneAway = false;
    session.on('goaway', () => (goneAway = true));
    for (let i = 0; i < 5; i++) {
      await ping(session);
      await sleep(90);
    }
    expect(goneAway).toBe(false);
    expect(session.closed).toBe(false);
    session.destroy();
    // No call open: pings at the same pace are strikes (grpc-go's two-hour floor for keepalive without streams).
    const idle = http2.connect(`http://127.0.0.1:${s.port}`);
    idle.on('error', () => {});
    const idleGoAway = new Promise<number>((resolve) => idle.on('goaway', (code) => resolve(code)));
    await new Promise<void>((resolve) => idle.once('connect', () => resolve()));
    for (let i = 0; i < 4; i++) {
      await ping(idle).catch(() => {});
      await sleep(90);
    }
    expect(await within(idleGoAway, 5000)).toBe(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
    idle.destroy();
    s.listener.close();
    await s.server.close(100);
  });

  it('on close sends GOAWAY, lets an open call finish within the grace period, then cuts what is left', async () => {
    const s = await start({ messageBytesMax: 1024 });
    const Ctor = grpc.makeGenericClientConstructor(serviceDefinition('etcdserverpb.KV'), 'KV');
    const client = new Ctor(`127.0.0.1:${s.port}`, grpc.credentials.createInsecure()) as grpc.Client & Record<string, Function>;
    let answer: ((err: unknown, value?: unknown) => void) | undefined;
    const started = new Promise<void>((resolve) => {
      behaviour.put = (_call, cb) => {
        answer = cb;
        resolve();
      };
    });
    const finished = new Promise<unknown>((resolve) => client.Put!({ key: Buffer.from('k') }, (err: unknown) => resolve(err)));
    await started;
    const closed = s.server.close(2000);
    answer!(null, {});
    expect(await finished).toBeNull();
    expect(await closed).toBe(false);
    // A second call that never answers is cut at the grace period.
    const s2 = await start({ messageBytesMax: 1024 });
    const client2 = new Ctor(`127.0.0.1:${s2.port}`, grpc.credentials.createInsecure()) as grpc.Client & Record<string, Function>;
    const started2 = new Promise<void>((resolve) => {
      behaviour.put = () => resolve();
    });
    const cut = new Promise<grpc.ServiceError>((resolve) => client2.Put!({ key: Buffer.from('k') }, (err: grpc.ServiceError) => resolve(err)));
    await started2;
    expect(await s2.server.close(100)).toBe(true);
    expect((await cut).code).toBe(grpc.status.UNAVAILABLE);
    client.close();
    client2.close();
    s.listener.close();
    s2.listener.close();
  });
});
});
