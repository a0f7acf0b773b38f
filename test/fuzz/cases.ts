/**
 * Hostile inputs for every listener of a member, each drawn from its own seed (so any one replays alone):
 * random bytes, truncation, mid-body disconnects, malformed framing, huge declared lengths, deep nesting and
 * mutations of valid messages. Valid messages only touch keys under "fuzz/" and never delete, compact,
 * revoke or change membership: what a case may legitimately do must not look like lost data.
 */
import { Prng } from '../../src/base/prng.js';
import { pack } from '../../src/storage/entry-codec.js';
import { messageType } from '../../src/api/grpc/proto.js';
import { FrameType } from '../../src/peer/frame.js';
import { peerHandshakeFrameBytesMax } from '../../src/base/limits.js';
import { mutate, pick, randomBytes } from './mutate.js';
import { h2ConnectionCase, http1PipelineCase } from './stream-cases.js';
import { chunked, grpcCall, grpcMessage, h2Flag, h2Frame, h2Preface, h2Type, hpackBlock, grpcHeaders, http1Request, peerFrame } from './wire.js';

export type Listener = 'http1' | 'grpc' | 'join' | 'peer';
export const listeners: readonly Listener[] = ['http1', 'grpc', 'join', 'peer'];

export interface FuzzCase {
  seed: number;
  listener: Listener;
  /** What was generated, for the failure report. */
  name: string;
  port: 'client' | 'peer';
  bytes: Buffer;
  /** After sending: drop the connection, half-close it, or read the answer until the server closes. */
  then: 'close' | 'half' | 'wait';
}

const b64 = (s: string | Buffer): string => Buffer.from(s).toString('base64');
const fuzzKey = (rng: Prng): string => `fuzz/${rng.int(50)}`;
const edgeInts = ['0', '1', '-1', '9223372036854775807', '-9223372036854775808', '18446744073709551615', '99999999999999999999999', '1.5', '1e3'];

function randomString(rng: Prng, n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += String.fromCharCode(rng.next() < 0.9 ? 0x20 + rng.int(95) : rng.int(0xffff));
  return s;
}

/** A random JSON-able value, `depth` levels at most. */
function randomValue(rng: Prng, depth: number): unknown {
  switch (depth <= 0 ? rng.int(5) : rng.int(8)) {
    case 0: return null;
    case 1: return rng.next() < 0.5;
    case 2: return pick(rng, [0, -1, 1.5, 2 ** 53, -(2 ** 63), 1e308, rng.int(1000)]);
    case 3: return randomString(rng, rng.int(20));
    case 4: return pick(rng, edgeInts);
    case 5: case 6: {
      const o: Record<string, unknown> = {};
      for (let i = rng.int(5); i > 0; i--) o[pick(rng, ['key', 'value', 'limit', 'range_end', 'success', 'request_txn', 'create_request', 'ID', 'TTL', randomString(rng, 5)])] = randomValue(rng, depth - 1);
      return o;
    }
    default: return Array.from({ length: rng.int(4) }, () => randomValue(rng, depth - 1));
  }
}

/** JSON nested `depth` levels, built as text (a value that deep would overflow JSON.stringify). */
function deepJson(rng: Prng, depth: number): string {
  if (rng.next() < 0.5) return `${'{"success":[{"request_txn":'.repeat(depth)}{}${'}]}'.repeat(depth)}`;
  return `{"key":"YQ==","x":${'['.repeat(depth)}${']'.repeat(depth)}}`;
}

function txnJson(rng: Prng, depth: number): unknown {
  const op = (): unknown => (depth > 0 && rng.next() < 0.3 ? { request_txn: txnJson(rng, depth - 1) }
    : rng.next() < 0.5 ? { request_put: { key: b64(fuzzKey(rng)), value: b64(randomString(rng, 8)) } } : { request_range: { key: b64(fuzzKey(rng)) } });
  return {
    compare: rng.next() < 0.5 ? [{ key: b64(fuzzKey(rng)), target: pick(rng, ['VERSION', 'CREATE', 'MOD', 'VALUE', 'LEASE', 'BOGUS']), result: 'EQUAL', version: '0' }] : [],
    success: Array.from({ length: rng.int(4) }, op),
    failure: Array.from({ length: rng.int(3) }, op),
  };
}

const gatewayRoutes: Array<[string, (rng: Prng) => unknown]> = [
  ['/v3/kv/range', (rng) => ({ key: b64(fuzzKey(rng)), range_end: rng.next() < 0.3 ? b64('fuzz0') : undefined, limit: pick(rng, edgeInts) })],
  ['/v3/kv/put', (rng) => ({ key: b64(fuzzKey(rng)), value: b64(randomString(rng, rng.int(64))) })],
  ['/v3/kv/txn', (rng) => txnJson(rng, 3)],
  ['/v3/watch', (rng) => ({ create_request: { key: b64(fuzzKey(rng)), start_revision: pick(rng, edgeInts) } })],
  ['/v3/lease/grant', (rng) => ({ TTL: pick(rng, ['1', '60', '-1', '0']) })],
  ['/v3/lease/keepalive', (rng) => ({ ID: pick(rng, edgeInts) })],
  ['/v3/lease/timetolive', (rng) => ({ ID: pick(rng, edgeInts), keys: true })],
  ['/v3/maintenance/status', () => ({})],
  ['/v3/cluster/member/list', () => ({})],
  ['/v3/election/leader', (rng) => ({ name: b64(fuzzKey(rng)) })],
  ['/v3/election/observe', (rng) => ({ name: b64(fuzzKey(rng)) })],
  ['/v3/auth/authenticate', (rng) => ({ name: 'root', password: randomString(rng, 8) })],
  ['/health', () => ({})],
  ['/version', () => ({})],
  ['/v3/nope', () => ({})],
];

function http1Case(rng: Prng): Omit<FuzzCase, 'seed' | 'listener' | 'port'> {
  const [path, makeBody] = pick(rng, gatewayRoutes);
  const kind = rng.int(10);
  let body: Buffer;
  let what: string;
  if (kind < 5) [body, what] = [Buffer.from(JSON.stringify(makeBody(rng))), 'valid JSON'];
  else if (kind < 7) [body, what] = [Buffer.from(JSON.stringify(randomValue(rng, 4)) ?? ''), 'random JSON'];
  else if (kind < 8) [body, what] = [Buffer.from(deepJson(rng, pick(rng, [50, 200, 3000, 12000]))), 'deep JSON'];
  else if (kind < 9) [body, what] = [Buffer.concat(Array.from({ length: 1 + rng.int(4) }, () => Buffer.from(JSON.stringify(makeBody(rng))))), 'several objects'];
  else [body, what] = [randomBytes(rng, rng.int(200)), 'random bytes'];
  const headers: Array<[string, string]> = [];
  const framing = rng.int(6);
  if (framing <= 1) headers.push(['Content-Length', String(body.length)]);
  else if (framing === 2) headers.push(['Transfer-Encoding', 'chunked']);
  else if (framing === 3) headers.push(['Content-Length', String(body.length + 1 + rng.int(1000))]);
  else if (framing === 4) headers.push(['Content-Length', pick(rng, ['99999999999', '-1', '1e3', ' 5', '0x10', '18446744073709551616'])]);
  if (rng.next() < 0.2) headers.push(['Grpc-Metadata-Token', randomString(rng, 10)]);
  if (rng.next() < 0.1) headers.push([pick(rng, ['Authorization', 'Grpc-Metadata-Hasleader', 'Grpc-Metadata-X-Bin', 'Grpc-Metadata-']), randomString(rng, 6)]);
  const payload = framing === 2 ? chunked(body, 1 + rng.int(4)) : body;
  let bytes = http1Request(pick(rng, ['POST', 'POST', 'POST', 'GET', 'OPTIONS', 'PUT']), path, headers, payload);
  const mutated = rng.next() < 0.3;
  if (mutated) bytes = mutate(rng, bytes);
  return { name: `HTTP/1.1 ${path} ${what}, framing ${framing}${mutated ? ', mutated' : ''}`, bytes, then: pick(rng, ['close', 'half', 'wait']) };
}

/** [gRPC path, request type, a valid request object]. */
const grpcMethods: Array<[string, string, (rng: Prng) => Record<string, unknown>]> = [
  ['/etcdserverpb.KV/Range', 'etcdserverpb.RangeRequest', (rng) => ({ key: Buffer.from(fuzzKey(rng)), limit: rng.int(10) })],
  ['/etcdserverpb.KV/Put', 'etcdserverpb.PutRequest', (rng) => ({ key: Buffer.from(fuzzKey(rng)), value: randomBytes(rng, rng.int(64)) })],
  ['/etcdserverpb.KV/Txn', 'etcdserverpb.TxnRequest', (rng) => ({
    success: [{ requestPut: { key: Buffer.from(fuzzKey(rng)), value: Buffer.from('v') } }, { requestRange: { key: Buffer.from(fuzzKey(rng)) } }],
  })],
  ['/etcdserverpb.Watch/Watch', 'etcdserverpb.WatchRequest', (rng) => ({ createRequest: { key: Buffer.from(fuzzKey(rng)), startRevision: rng.int(5) } })],
  ['/etcdserverpb.Lease/LeaseGrant', 'etcdserverpb.LeaseGrantRequest', (rng) => ({ TTL: 1 + rng.int(100) })],
  ['/etcdserverpb.Lease/LeaseKeepAlive', 'etcdserverpb.LeaseKeepAliveRequest', (rng) => ({ ID: rng.int(1000) })],
  ['/etcdserverpb.Lease/LeaseTimeToLive', 'etcdserverpb.LeaseTimeToLiveRequest', (rng) => ({ ID: rng.int(1000), keys: true })],
  ['/etcdserverpb.Maintenance/Status', 'etcdserverpb.StatusRequest', () => ({})],
  ['/etcdserverpb.Cluster/MemberList', 'etcdserverpb.MemberListRequest', () => ({})],
  ['/v3electionpb.Election/Leader', 'v3electionpb.LeaderRequest', (rng) => ({ name: Buffer.from(fuzzKey(rng)) })],
  ['/etcdserverpb.Auth/Authenticate', 'etcdserverpb.AuthenticateRequest', (rng) => ({ name: 'root', password: randomString(rng, 6) })],
];

/** Protobuf bytes nested `depth` levels: txns (TxnRequest.success → RequestOp.request_txn) or groups. */
function deepProtobuf(rng: Prng, depth: number): Buffer {
  if (rng.next() < 0.3) return Buffer.concat([Buffer.alloc(depth, 0x0b), Buffer.alloc(depth, 0x0c)]); // start/end group
  let m: Buffer = Buffer.alloc(0);
  const field = (no: number, b: Buffer): Buffer => {
    const len: number[] = [];
    for (let n = b.length; ; n >>>= 7) {
      if (n < 128) {
        len.push(n);
        break;
      }
      len.push((n & 127) | 128);
    }
    return Buffer.concat([Buffer.from([(no << 3) | 2, ...len]), b]);
  };
  for (let i = 0; i < depth; i++) m = field(2, field(4, m));
  return m;
}

function grpcFraming(rng: Prng, path: string, message: Buffer): [Buffer, string] {
  switch (rng.int(8)) {
    case 0: return [grpcCall(path, [message, message]), 'two messages'];
    case 1: {
      const declared = pick(rng, [0xffffffff, 0x7fffffff, message.length + 100, 4 * 1024 * 1024]);
      return [Buffer.concat([h2Preface, h2Frame(h2Type.settings, 0, 0, Buffer.alloc(0)), h2Frame(h2Type.settings, h2Flag.ack, 0, Buffer.alloc(0)),
        h2Frame(h2Type.headers, h2Flag.endHeaders, 1, hpackBlock(grpcHeaders(path))), h2Frame(h2Type.data, h2Flag.endStream, 1, grpcMessage(message, declared))]), `gRPC length ${declared}`];
    }
    case 2: {
      const all = grpcCall(path, [message]);
      return [all.subarray(0, h2Preface.length + rng.int(all.length - h2Preface.length)), 'cut'];
    }
    case 3: {
      const junk = h2Frame(pick(rng, [0, 2, 3, 5, 6, 7, 8, 9, 10, 0xff]), rng.int(256), pick(rng, [0, 1, 3, 0x7fffffff]), randomBytes(rng, rng.int(20)), pick(rng, [undefined, 0xffffff, 0]) as number | undefined);
      const all = grpcCall(path, [message]);
      const at = h2Preface.length + 9;
      return [Buffer.concat([all.subarray(0, at), junk, all.subarray(at)]), 'junk frame'];
    }
    case 4: {
      const headers = hpackBlock([...grpcHeaders(path), ...Array.from({ length: rng.int(3) }, (): [string, string] => [pick(rng, ['authorization', 'token', 'hasleader', 'grpc-timeout', 'grpc-encoding', 'x-bin']), randomString(rng, 8)])]);
      return [Buffer.concat([h2Preface, h2Frame(h2Type.settings, 0, 0, Buffer.alloc(0)), h2Frame(h2Type.settings, h2Flag.ack, 0, Buffer.alloc(0)),
        h2Frame(h2Type.headers, h2Flag.endHeaders, 1, headers), h2Frame(h2Type.data, h2Flag.endStream, 1, Buffer.concat([Buffer.from([rng.int(2)]), grpcMessage(message).subarray(1)]))]), 'odd metadata / compressed flag'];
    }
    default: return [grpcCall(path, [message]), 'one message'];
  }
}

function grpcCase(rng: Prng): Omit<FuzzCase, 'seed' | 'listener' | 'port'> {
  const [path, typeName, make] = pick(rng, grpcMethods);
  const kind = rng.int(10);
  let message: Buffer;
  let what: string;
  const type = messageType(typeName);
  const valid = (): Buffer => Buffer.from(type.encode(type.fromObject(make(rng))).finish());
  if (kind < 4) [message, what] = [valid(), 'valid'];
  else if (kind < 7) [message, what] = [mutate(rng, valid()), 'mutated'];
  else if (kind < 8) [message, what] = [deepProtobuf(rng, pick(rng, [60, 200, 1100, 20000])), 'deep'];
  else [message, what] = [randomBytes(rng, rng.int(100)), 'random bytes'];
  const usePath = rng.next() < 0.05 ? `/${randomString(rng, 10)}` : path;
  let [bytes, framing] = grpcFraming(rng, usePath, message);
  const mutated = rng.next() < 0.2;
  if (mutated) bytes = Buffer.concat([bytes.subarray(0, h2Preface.length), mutate(rng, bytes.subarray(h2Preface.length))]);
  return { name: `gRPC ${usePath} ${what}, ${framing}${mutated ? ', frames mutated' : ''}`, bytes, then: pick(rng, ['close', 'wait', 'wait']) };
}

/** msgpack nested `depth` arrays deep, as bytes (packing such a value would overflow the packer's stack). */
const deepMsgpack = (depth: number): Buffer => Buffer.concat([Buffer.alloc(depth, 0x91), Buffer.from([0xc0])]);

function randomPacked(rng: Prng): Buffer {
  if (rng.next() < 0.15) return deepMsgpack(pick(rng, [100, 5000, 100_000]));
  const v = rng.next() < 0.5 ? randomValue(rng, 3) : randomBytes(rng, rng.int(40));
  return Buffer.from(pack(v));
}

function joinCase(rng: Prng): Omit<FuzzCase, 'seed' | 'listener' | 'port'> {
  const challenge = rng.next() < 0.3;
  let message: Buffer;
  let what: string;
  if (challenge) [message, what] = [Buffer.from(pack({})), 'challenge'];
  else if (rng.next() < 0.6) {
    const call = {
      nonce: rng.next() < 0.8 ? randomBytes(rng, 32) : randomValue(rng, 2),
      clientNonce: rng.next() < 0.8 ? randomBytes(rng, 32) : randomValue(rng, 2),
      method: pick(rng, ['join', 'members', 'memberRemove', randomString(rng, 5), 7]),
      body: rng.next() < 0.8 ? randomPacked(rng) : randomValue(rng, 2),
      mac: randomBytes(rng, pick(rng, [0, 32, 33])),
    };
    [message, what] = [Buffer.from(pack(call)), `call ${String(call.method)}`];
  } else [message, what] = [randomPacked(rng), 'random msgpack'];
  if (rng.next() < 0.3) message = mutate(rng, message);
  const path = `/etcetera.v1.Join/${challenge ? 'Challenge' : 'Call'}`;
  const [bytes, framing] = grpcFraming(rng, path, message);
  return { name: `Join ${what}, ${framing}`, bytes, then: pick(rng, ['close', 'wait']) };
}

function peerCase(rng: Prng): Omit<FuzzCase, 'seed' | 'listener' | 'port'> {
  const kind = rng.int(8);
  let bytes: Buffer;
  let what: string;
  const auth = (): Buffer => peerFrame(FrameType.Auth, {
    kind: pick(rng, ['raft', 'snapshot', 'request', 'bogus', 5]),
    from: pick(rng, [1n, 2n, -1n, 2n ** 64n - 1n, 'x']),
    to: pick(rng, [1n, 0n, 'x']),
    clusterId: pick(rng, [0n, 1n, 'x']),
    nonce: randomBytes(rng, pick(rng, [32, 0, 5])),
    mac: randomBytes(rng, pick(rng, [32, 0])),
  });
  if (kind === 0) [bytes, what] = [auth(), 'auth'];
  else if (kind === 1) [bytes, what] = [mutate(rng, Buffer.concat([auth(), peerFrame(FrameType.Messages, [])])), 'mutated auth'];
  else if (kind === 2) {
    const head = Buffer.alloc(5);
    head.writeUInt32BE(pick(rng, [0, 0xffffffff, 0x7fffffff, 16 * 1024 * 1024 + 1, 100]), 0);
    head[4] = pick(rng, [2, 5, 7, 99]);
    [bytes, what] = [Buffer.concat([head, randomBytes(rng, rng.int(64))]), 'declared length'];
  } else if (kind === 3) {
    const payload = rng.next() < 0.5 ? deepMsgpack(pick(rng, [1000, 100_000])) : randomPacked(rng);
    const head = Buffer.alloc(5);
    head.writeUInt32BE(payload.length + 1, 0);
    head[4] = pick(rng, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    [bytes, what] = [Buffer.concat([head, payload]), 'frame with a random payload'];
  } else if (kind === 4) [bytes, what] = [Buffer.concat(Array.from({ length: 1 + rng.int(50) }, () => peerFrame(pick(rng, [5, 6, 7, 10]), randomValue(rng, 2)))), 'frames before auth'];
  else if (kind === 5) [bytes, what] = [randomBytes(rng, rng.int(300)), 'random bytes'];
  else if (kind === 6) {
    // Around the handshake frame limit (peerHandshakeFrameBytesMax): the last size taken, the first refused.
    const size = pick(rng, [peerHandshakeFrameBytesMax - 1, peerHandshakeFrameBytesMax, peerHandshakeFrameBytesMax + 1, 64 * 1024]);
    const head = Buffer.alloc(5);
    head.writeUInt32BE(size, 0);
    head[4] = pick(rng, [2, 5, 10]);
    [bytes, what] = [Buffer.concat([head, Buffer.alloc(Math.min(size - 1, 64 * 1024), 0xc0)]), `a ${size}-byte frame before auth`];
  } else {
    // The attack of issue 31: a well-formed Auth with a wrong MAC, then large frames on the half-open socket.
    const big = peerFrame(FrameType.Messages, [randomBytes(rng, 256 * 1024)]);
    [bytes, what] = [Buffer.concat([auth(), ...Array.from({ length: 1 + rng.int(4) }, () => big)]), 'wrong MAC then large frames'];
  }
  return { name: `peer ${what}`, bytes, then: pick(rng, ['close', 'half', 'wait']) };
}

/** The case `seed` generates; the same seed always gives the same bytes. */
export function fuzzCase(seed: number): FuzzCase {
  const rng = new Prng(seed);
  const listener = pick(rng, listeners);
  const port = listener === 'peer' ? 'peer' : 'client';
  if (listener === 'grpc' && rng.next() < 0.3) {
    const [bytes, name] = h2ConnectionCase(rng, validGrpcCall);
    return { seed, listener, port, name, bytes, then: pick(rng, ['close', 'wait']) };
  }
  if (listener === 'http1' && rng.next() < 0.2) {
    const [bytes, name] = http1PipelineCase(rng, (r) => http1Case(r).bytes);
    return { seed, listener, port, name, bytes, then: pick(rng, ['close', 'half', 'wait']) };
  }
  const make = { http1: http1Case, grpc: grpcCase, join: joinCase, peer: peerCase }[listener];
  return { seed, listener, port, ...make(rng) };
}

/** A valid call of a streaming or unary method, for connection-level cases. */
function validGrpcCall(rng: Prng): [string, Buffer] {
  const [path, typeName, make] = pick(rng, grpcMethods);
  const type = messageType(typeName);
  return [path, Buffer.from(type.encode(type.fromObject(make(rng))).finish())];
}
