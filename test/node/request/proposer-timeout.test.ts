/**
 * Which timeout a proposal gets (issue 32, item 4), as etcd's parseProposeCtxErr decides: started in the two
 * election timeouts before the current leader was elected → "request timed out, possibly due to previous
 * leader failure" (ErrTimeoutDueToLeaderFail); otherwise "request timed out" (ErrTimeout).
 */
import { describe, expect, it } from 'vitest';
import { timeoutError } from '../../../src/node/request/proposer.js';

const electionMs = 1000;

describe('a proposal that timed out', () => {
  it.each([
    { what: 'started 1 s before the current leader was elected', startMs: 9_000, electedMs: 10_000, message: 'etcdserver: request timed out, possibly due to previous leader failure' },
    { what: 'started just inside the two election timeouts before it', startMs: 8_001, electedMs: 10_000, message: 'etcdserver: request timed out, possibly due to previous leader failure' },
    { what: 'started more than two election timeouts before it', startMs: 7_999, electedMs: 10_000, message: 'etcdserver: request timed out' },
    { what: 'started after the leader was elected', startMs: 10_500, electedMs: 10_000, message: 'etcdserver: request timed out' },
    { what: 'started with no leader ever seen', startMs: 10_500, electedMs: undefined, message: 'etcdserver: request timed out' },
  ])('$what: $message', ({ startMs, electedMs, message }) => {
    expect(timeoutError(startMs, electedMs, electionMs).message).toBe(message);
  });
});
