/** How long requests wait, derived from the election timeout as etcd derives them. */
import { assert } from '../../base/assert.js';

/** etcd: ReqTimeout = 5 s + 2 × election timeout. */
export function requestTimeoutMs(electionMs: number): number {
  return 5000 + 2 * electionMs;
}

/** How long a request waits for a leader before "no leader": a few election timeouts, as a client would retry. */
export function leaderWaitMs(electionMs: number): number {
  return 3 * electionMs;
}

assert(requestTimeoutMs(1000) === 7000, 'etcd request timeout formula');
