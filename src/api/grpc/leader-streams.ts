/**
 * etcd's monitorLeader: streams opened with require-leader metadata are closed with "etcdserver: no leader"
 * once the member has seen no leader for `checksMax` consecutive checks (one per election timeout). Closing
 * a stream costs the client a reconnect, so a short leaderless blip is tolerated, as in etcd.
 */
import type { RequestContext } from '../../node/server-api.js';
import { EtcdError } from '../../node/errors.js';

export interface LeaderStreams {
  /** Registers a stream; `close` is called at most once with the no-leader error. Returns an untrack function. */
  track(ctx: RequestContext, close: (err: EtcdError) => void): () => void;
  /** One periodic check; returns how many streams were closed. */
  check(hasLeader: boolean): number;
}

/** etcd's maxNoLeaderCnt. */
export const noLeaderChecksMax = 3;

export function leaderStreams(checksMax = noLeaderChecksMax): LeaderStreams {
  const streams = new Set<(err: EtcdError) => void>();
  let noLeaderChecks = 0;
  return {
    track(ctx, close) {
      if (!ctx.requireLeader) return () => {};
      streams.add(close);
      return () => void streams.delete(close);
    },
    check(hasLeader) {
      noLeaderChecks = hasLeader ? 0 : noLeaderChecks + 1;
      if (noLeaderChecks < checksMax) return 0;
      const closing = [...streams];
      streams.clear();
      for (const close of closing) close(new EtcdError('noLeader'));
      return closing.length;
    },
  };
}
