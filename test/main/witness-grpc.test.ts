/**
 * The witness's hand-encoded gRPC replies (src/main/witness-grpc.ts) decode, with etcd's own rpc.proto (the
 * descriptors a data member serves with), to what `etcdctl endpoint status` and `endpoint health` read.
 */
import { describe, expect, it } from 'vitest';
import { messageType } from '../../src/api/grpc/proto.js';
import { alarmActionOf, encodeWitnessAlarms, encodeWitnessStatus, witnessRangeRefusal, type WitnessGrpcSource } from '../../src/main/witness-grpc.js';
import type { Status } from '../../src/raft/types.js';

function source(leader: bigint): WitnessGrpcSource {
  const status = { id: 0xbd8d6a8a1694024en, term: 7, commit: 1234567890123, applied: 1234567890000, leader } as Status;
  return { clusterId: 0xfedcba9876543210n, status: () => status };
}

const asObject = (name: string, bytes: Buffer): Record<string, unknown> =>
  messageType(name).toObject(messageType(name).decode(bytes), { longs: String, defaults: true }) as Record<string, unknown>;

describe('the witness gRPC replies', () => {
  it('Status: id, term, commit, leader, version, no database, not a learner; "no leader" in errors when it hears none', () => {
    const s = asObject('etcdserverpb.StatusResponse', encodeWitnessStatus(source(0x0e49a226f937de3an), '3.5.17'));
    expect(s).toMatchObject({
      header: { clusterId: 0xfedcba9876543210n.toString(), memberId: 0xbd8d6a8a1694024en.toString(), revision: '0', raftTerm: '7' },
      version: '3.5.17', dbSize: '0', leader: 0x0e49a226f937de3an.toString(), raftIndex: '1234567890123', raftTerm: '7',
      raftAppliedIndex: '1234567890000', errors: [], isLearner: false,
    });
    const lost = asObject('etcdserverpb.StatusResponse', encodeWitnessStatus(source(0n), '3.5.17'));
    expect(lost).toMatchObject({ leader: '0', errors: ['etcdserver: no leader'] });
  });

  it('Alarm: a header and no alarm; the action is read from the request', () => {
    expect(asObject('etcdserverpb.AlarmResponse', encodeWitnessAlarms(source(1n)))).toMatchObject({ alarms: [], header: { raftTerm: '7' } });
    expect(alarmActionOf(Buffer.alloc(0))).toBe(0);
    expect(alarmActionOf(Buffer.from([0x08, 0x02]))).toBe(2);
  });

  it('Range: permission denied with a leader (etcdctl counts it healthy), no leader (UNAVAILABLE) without', () => {
    expect(witnessRangeRefusal(5n)).toEqual({ code: 7, details: 'etcdserver: permission denied' });
    expect(witnessRangeRefusal(0n)).toEqual({ code: 14, details: 'etcdserver: no leader' });
  });
});
