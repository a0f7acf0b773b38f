/**
 * The gRPC calls a witness answers on its client URLs (issue 32, item 4): what `etcdctl endpoint health` and
 * `endpoint status` need, and nothing else (every other method is UNIMPLEMENTED, the server's answer for a
 * path it does not know).
 *
 * etcdctl's `endpoint health` (3.4 and 3.5, ctlv3/command/ep_command.go) does a Range of key "health" and
 * counts the endpoint healthy when it succeeds or fails with exactly rpctypes.ErrPermissionDenied (code
 * PERMISSION_DENIED, "etcdserver: permission denied": "permission denied is OK since proposal goes through
 * consensus to get it"); then it lists alarms (Maintenance.Alarm GET) and calls the endpoint unhealthy if that
 * fails or names an alarm. `endpoint status` is Maintenance.Status.
 *
 * So KV.Range is refused, as a witness has no keys to give, and the refusal says whether it hears a leader:
 *   - a leader: "etcdserver: permission denied". It is true (no client may read on a witness), it is the one
 *     refusal etcdctl counts as healthy, and clients do not retry it elsewhere as if the member were down;
 *   - none: "etcdserver: no leader" (UNAVAILABLE), etcd's own words for a member without a leader. clientv3
 *     retries UNAVAILABLE reads until --command-timeout, then the endpoint is unhealthy, as a leaderless
 *     etcd member's is.
 * Status says what a witness knows: version, its id, leader, term, commit index, a database of 0 bytes, not a
 * learner, and "etcdserver: no leader" in errors when it hears none (as etcd 3.5 does). It has no alarms: a
 * witness holds no backend to fill or corrupt.
 *
 * The messages are encoded here by hand (a few fields of etcd's rpc.proto): a witness loads no protobufjs.
 */
import type { ServiceDefinition, UntypedServiceImplementation } from '@grpc/grpc-js';
import { code } from '../api/h2grpc/server-call.js';
import { etcdVersion } from '../base/version.js';
import { etcdErrors } from '../node/errors.js';
import type { Status } from '../raft/types.js';

export interface WitnessGrpcSource {
  clusterId: bigint;
  status(): Status;
}

/** etcd's AlarmRequest.AlarmAction: GET = 0, ACTIVATE = 1, DEACTIVATE = 2. */
const alarmActivate = 1;

// ---- protobuf, the few wire forms these messages use ----

function varint(out: number[], v: bigint): void {
  let u = BigInt.asUintN(64, v);
  while (u >= 0x80n) {
    out.push(Number(u & 0x7fn) | 0x80);
    u >>= 7n;
  }
  out.push(Number(u));
}

/** A varint field (uint64, int64, bool); zero is left out, as proto3 does. */
function intField(out: number[], field: number, v: bigint | number | boolean): void {
  const n = typeof v === 'boolean' ? (v ? 1n : 0n) : BigInt(v);
  if (n === 0n) return;
  varint(out, BigInt(field << 3));
  varint(out, n);
}

/** A length-delimited field (string, bytes, message). */
function bytesField(out: number[], field: number, bytes: Uint8Array | number[]): void {
  varint(out, BigInt((field << 3) | 2));
  varint(out, BigInt(bytes.length));
  for (const b of bytes) out.push(b);
}

/** ResponseHeader: cluster_id 1, member_id 2, revision 3 (a witness has none), raft_term 4. */
function header(source: WitnessGrpcSource, s: Status): number[] {
  const h: number[] = [];
  intField(h, 1, source.clusterId);
  intField(h, 2, s.id);
  intField(h, 4, s.term);
  return h;
}

/** StatusResponse (rpc.proto): header 1, version 2, dbSize 3, leader 4, raftIndex 5, raftTerm 6, raftAppliedIndex 7, errors 8, dbSizeInUse 9, isLearner 10. */
export function encodeWitnessStatus(source: WitnessGrpcSource, version = etcdVersion): Buffer {
  const s = source.status();
  const out: number[] = [];
  bytesField(out, 1, header(source, s));
  bytesField(out, 2, Buffer.from(version, 'utf8'));
  intField(out, 4, s.leader);
  intField(out, 5, s.commit);
  intField(out, 6, s.term);
  intField(out, 7, s.applied);
  if (s.leader === 0n) bytesField(out, 8, Buffer.from(etcdErrors.noLeader.message, 'utf8'));
  return Buffer.from(out);
}

/** AlarmResponse: header 1 and no alarms. */
export function encodeWitnessAlarms(source: WitnessGrpcSource): Buffer {
  const out: number[] = [];
  bytesField(out, 1, header(source, source.status()));
  return Buffer.from(out);
}

/** AlarmRequest's action (field 1), 0 when absent; other fields are not needed. */
export function alarmActionOf(request: Buffer): number {
  return request.length >= 2 && request[0] === 0x08 ? request[1]! : 0;
}

// ---- the services ----

interface CallError {
  code: number;
  details: string;
}

/** The Range refusal above: healthy (a leader heard) or not. */
export function witnessRangeRefusal(leader: bigint): CallError {
  const e = leader === 0n ? etcdErrors.noLeader : etcdErrors.permissionDenied;
  return { code: e.status === 'UNAVAILABLE' ? code.unavailable : code.permissionDenied, details: e.message };
}

type Unary = (call: { request: unknown }, callback: (err: CallError | null, value?: Buffer) => void) => void;

function unary(path: string): ServiceDefinition[string] {
  const same = (b: Buffer): Buffer => b;
  return {
    path,
    requestStream: false,
    responseStream: false,
    requestSerialize: same,
    requestDeserialize: same,
    responseSerialize: same,
    responseDeserialize: same,
    originalName: path.slice(path.lastIndexOf('/') + 1),
  };
}

export const witnessKvDefinition: ServiceDefinition = { Range: unary('/etcdserverpb.KV/Range') };
export const witnessMaintenanceDefinition: ServiceDefinition = {
  Status: unary('/etcdserverpb.Maintenance/Status'),
  Alarm: unary('/etcdserverpb.Maintenance/Alarm'),
};

export function witnessKvService(source: WitnessGrpcSource): UntypedServiceImplementation {
  const range: Unary = (_call, callback) => callback(witnessRangeRefusal(source.status().leader));
  return { Range: range };
}

export function witnessMaintenanceService(source: WitnessGrpcSource): UntypedServiceImplementation {
  const status: Unary = (_call, callback) => callback(null, encodeWitnessStatus(source, etcdVersion));
  const alarm: Unary = (call, callback) => {
    // Nothing to list or disarm; raising an alarm on a member without a backend has no meaning.
    if (alarmActionOf(call.request as Buffer) === alarmActivate) return callback({ code: code.unimplemented, details: 'a witness holds no data: it raises no alarm' });
    callback(null, encodeWitnessAlarms(source));
  };
  return { Status: status, Alarm: alarm };
}
