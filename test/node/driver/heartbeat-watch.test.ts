/**
 * etcd_server_heartbeat_send_failures_total counts what etcd's timeoutDetector counts: a leader's heartbeat to
 * a peer more than two heartbeat intervals after the previous one to that peer (issue 32, item 4).
 */
import { describe, expect, it } from 'vitest';
import { HeartbeatWatch } from '../../../src/node/driver/heartbeat-watch.js';
import type { Message, MessageType } from '../../../src/raft/types.js';

const msg = (type: MessageType, to: bigint, term = 2): Message =>
  ({ type, from: 1n, to, term, logTerm: 0, index: 0, entries: [], commit: 0, reject: false, rejectHint: 0 });

describe('HeartbeatWatch', () => {
  it('counts a heartbeat sent more than twice the interval after the last one to that peer, and passes every message on', () => {
    let now = 0;
    const late: [bigint, number][] = [];
    const sent: Message[] = [];
    const watch = new HeartbeatWatch({ heartbeatMs: 100, nowMs: () => now, onLate: (to, ms) => late.push([to, ms]) });
    const transport = watch.wrap({ send: (ms) => sent.push(...ms) });
    transport.send([msg('MsgHeartbeat', 2n), msg('MsgHeartbeat', 3n)]); // the first ones: nothing to compare
    now = 200; // exactly two intervals: on time
    transport.send([msg('MsgHeartbeat', 2n), msg('MsgHeartbeat', 3n)]);
    now = 650; // the loop was held up for 450 ms
    transport.send([msg('MsgHeartbeat', 2n), msg('MsgApp', 3n)]); // an append is no heartbeat
    expect(late).toEqual([[2n, 250]]);
    now = 800;
    transport.send([msg('MsgHeartbeat', 3n)]); // 600 ms after its last heartbeat
    expect(late).toEqual([[2n, 250], [3n, 400]]);
    expect(sent).toHaveLength(7);
  });

  it('starts afresh in a new term (a member that leads again after a gap is not late)', () => {
    let now = 0;
    let late = 0;
    const watch = new HeartbeatWatch({ heartbeatMs: 100, nowMs: () => now, onLate: () => late++ });
    watch.observe([msg('MsgHeartbeat', 2n, 2)]);
    now = 5000;
    watch.observe([msg('MsgHeartbeat', 2n, 4)]);
    expect(late).toBe(0);
    now = 5300;
    watch.observe([msg('MsgHeartbeat', 2n, 4)]);
    expect(late).toBe(1);
  });
});
