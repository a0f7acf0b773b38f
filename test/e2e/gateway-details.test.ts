/**
 * Issue 20, item 9: the gateway's header and integer rules and the Txn nesting rules, on a real member, each
 * against the answer etcd 3.4 gives (checked against a real etcd when one is installed):
 *   - `Grpc-Metadata-Token` authenticates as `Authorization` does; a header byte grpc-js cannot carry is an
 *     invalid token, as in etcd (before: it threw in the request and stopped the member);
 *   - an int64/uint64 field out of range is 400 with Go's message (before: wrapped silently and served);
 *   - a Txn nested up to the op budget is served, deeper is "too many operations" over gRPC and JSON alike
 *     (before: INTERNAL "Error deserializing request" from 51 levels, "Error serializing response" at 50).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as grpc from '@grpc/grpc-js';
import { killAll, startServer } from './harness.js';
import { haveEtcd, startRealEtcd, type RealEtcd } from './real-etcd.js';

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

async function post(base: string, path: string, body: string, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(`${base}${path}`, { method: 'POST', body, headers, signal: AbortSignal.timeout(10_000) });
  return { status: res.status, body: JSON.parse(await res.text()) as Record<string, unknown> };
}

/** A header value with a latin1 byte: fetch refuses it, so it goes out on a raw socket. */
async function postLatin1Authorization(base: string): Promise<number> {
  const { sendRaw, statusOf } = await import('./raw-socket.js');
  const body = '{"key":"YQ==","value":"YQ=="}';
  const req = `POST /v3/kv/put HTTP/1.1\r\nHost: x\r\nAuthorization: \xe9t\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;
  return statusOf(await sendRaw(Number(new URL(base).port), Buffer.from(req, 'latin1'), { then: 'wait', waitMs: 3000 })) ?? 0;
}

const deepJson = (depth: number): string =>
  `${'{"success":[{"request_txn":'.repeat(depth - 1)}{"success":[{"request_range":{"key":"aw=="}}]}${'}]}'.repeat(depth - 1)}`;

function varint(n: number): Buffer {
  const out: number[] = [];
  for (; n > 127; n >>>= 7) out.push((n & 127) | 128);
  out.push(n);
  return Buffer.from(out);
}
const field = (no: number, bytes: Buffer): Buffer => Buffer.concat([varint((no << 3) | 2), varint(bytes.length), bytes]);

/** TxnRequest{success: [RequestOp{request_txn: ...}]} `depth` levels, a range of "k" innermost, as raw bytes. */
function deepTxnBytes(depth: number): Buffer {
  let txn = field(2, field(1, field(1, Buffer.from('k'))));
  for (let i = 1; i < depth; i++) txn = field(2, field(4, txn));
  return txn;
}

function grpcTxn(base: string, bytes: Buffer): Promise<string> {
  const client = new grpc.Client(new URL(base).host, grpc.credentials.createInsecure());
  const id = (b: Buffer): Buffer => b;
  return new Promise<string>((resolve) => {
    client.makeUnaryRequest('/etcdserverpb.KV/Txn', id, id, bytes, { deadline: Date.now() + 10_000 }, (err) => {
      client.close();
      resolve(err ? `${grpc.status[err.code!]}: ${err.details}` : 'OK');
    });
  });
}

const tooMany = 'etcdserver: too many operations in txn request';

/** [path, body, status, error message (400s)]: etcd 3.4's answers. */
const jsonCases: Array<[string, string, number, string?]> = [
  ['/v3/kv/range', '{"key":"YQ==","limit":"9999999999999999999999"}', 400, 'json: cannot unmarshal number 9999999999999999999999 into Go value of type int64'],
  ['/v3/kv/range', '{"key":"YQ==","limit":"9223372036854775808"}', 400, 'json: cannot unmarshal number 9223372036854775808 into Go value of type int64'],
  ['/v3/kv/range', '{"key":"YQ==","limit":"-9223372036854775809"}', 400, 'json: cannot unmarshal number -9223372036854775809 into Go value of type int64'],
  ['/v3/kv/range', '{"key":"YQ==","limit":"9223372036854775807"}', 200],
  ['/v3/kv/range', '{"key":"YQ==","limit":1.5}', 400, 'json: cannot unmarshal number 1.5 into Go value of type int64'],
  ['/v3/kv/range', '{"key":"YQ==","limit":true}', 400, 'json: cannot unmarshal bool into Go value of type int64'],
  // Numbers judged by the text written (JSON.parse took 1e3 as 1000 and rounded the large ones).
  ['/v3/kv/range', '{"key":"YQ==","limit":1e3}', 400, 'json: cannot unmarshal number 1e3 into Go value of type int64'],
  ['/v3/kv/range', '{"key":"YQ==","limit":1.0}', 400, 'json: cannot unmarshal number 1.0 into Go value of type int64'],
  ['/v3/kv/range', '{"key":"YQ==","limit":9223372036854775808}', 400, 'json: cannot unmarshal number 9223372036854775808 into Go value of type int64'],
  ['/v3/kv/range', '{"key":"YQ==","limit":9223372036854775807}', 200],
  ['/v3/kv/range', '{"key":"YQ==","limit":-0}', 200],
  ['/v3/lease/timetolive', '{"ID":"18446744073709551615"}', 400, 'json: cannot unmarshal number 18446744073709551615 into Go value of type int64'],
  ['/v3/cluster/member/remove', '{"ID":"-1"}', 400, 'json: cannot unmarshal number -1 into Go value of type uint64'],
  ['/v3/cluster/member/remove', '{"ID":"18446744073709551616"}', 400, 'json: cannot unmarshal number 18446744073709551616 into Go value of type uint64'],
  ['/v3/kv/txn', deepJson(99), 200],
  ['/v3/kv/txn', deepJson(128), 200],
  ['/v3/kv/txn', deepJson(129), 400, tooMany],
  ['/v3/kv/txn', deepJson(2000), 400, tooMany],
  ['/v3/kv/txn', deepJson(5000), 400, "invalid character '[' exceeded max depth"],
];

const grpcCases: Array<[number, string]> = [
  [99, 'OK'],
  [128, 'OK'],
  [129, `INVALID_ARGUMENT: ${tooMany}`],
  [5000, `INVALID_ARGUMENT: ${tooMany}`],
];

/** Root added and granted, auth enabled, then a token for root; every step must succeed. */
async function enableAuth(base: string): Promise<string> {
  for (const [path, body] of [
    ['/v3/auth/user/add', '{"name":"root","password":"pw"}'],
    ['/v3/auth/user/grant', '{"user":"root","role":"root"}'],
    ['/v3/auth/enable', '{}'],
  ] as const) expect((await post(base, path, body)).status, path).toBe(200);
  const r = await post(base, '/v3/auth/authenticate', '{"name":"root","password":"pw"}');
  expect(r.status).toBe(200);
  return r.body.token as string;
}

/** The answers of one server, in a form both servers must share. */
async function answers(base: string): Promise<string[]> {
  const out: string[] = [];
  for (const [path, body] of jsonCases) {
    const r = await post(base, path, body);
    out.push(`${path} ${body.slice(0, 60)} -> ${r.status} ${r.status === 200 ? '' : String(r.body.error)}`);
  }
  for (const [depth] of grpcCases) out.push(`gRPC Txn nested ${depth} -> ${await grpcTxn(base, deepTxnBytes(depth))}`);
  const token = await enableAuth(base);
  const put = '{"key":"YQ==","value":"YQ=="}';
  out.push(`put with Grpc-Metadata-Token -> ${(await post(base, '/v3/kv/put', put, { 'Grpc-Metadata-Token': token })).status}`);
  out.push(`put with Authorization -> ${(await post(base, '/v3/kv/put', put, { Authorization: token })).status}`);
  out.push(`put with a bogus Grpc-Metadata-Token -> ${(await post(base, '/v3/kv/put', put, { 'Grpc-Metadata-Token': 'bogus' })).status}`);
  out.push(`put without a token -> ${(await post(base, '/v3/kv/put', put)).status}`);
  out.push(`put with a latin1 Authorization byte -> ${await postLatin1Authorization(base)}`);
  return out;
}

const expected = [
  ...jsonCases.map(([path, body, status, error]) => `${path} ${body.slice(0, 60)} -> ${status} ${error ?? ''}`),
  ...grpcCases.map(([depth, answer]) => `gRPC Txn nested ${depth} -> ${answer}`),
  'put with Grpc-Metadata-Token -> 200',
  'put with Authorization -> 200',
  'put with a bogus Grpc-Metadata-Token -> 401',
  'put without a token -> 400',
  'put with a latin1 Authorization byte -> 401',
];

describe('gateway headers, integers and txn nesting as etcd 3.4', () => {
  let etcd: RealEtcd | undefined;
  beforeAll(async () => {
    if (haveEtcd()) etcd = await startRealEtcd('details');
  });
  afterAll(async () => {
    await etcd?.stop();
    await killAll();
  });

  it('a member answers each request as etcd does, and keeps serving', async () => {
    const member = await startServer({ name: 'details', args: ['--cluster-init'] });
    expect(await answers(member.clientUrl)).toEqual(expected);
    expect(member.proc.exitCode).toBe(null);
  });

  it('the expected answers are etcd 3.4\'s', async () => {
    if (etcd === undefined) return;
    expect(await answers(etcd.clientUrl)).toEqual(expected);
  });
});
