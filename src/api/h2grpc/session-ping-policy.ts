/**
 * The client ping floor (ping-policy.ts) on a node:http2 session: its pings and streams are watched, its
 * GOAWAY sent through Node, and the connection destroyed once the GOAWAY had time to leave.
 */
import * as http2 from 'node:http2';
import { PingPolicy, tooManyPings } from './ping-policy.js';

/** How long the GOAWAY has to reach the client before the connection is destroyed. */
const goAwayFlushMs = 100;

export function watchSession(session: http2.ServerHttp2Session, minTimeMs: number): PingPolicy {
  const policy = new PingPolicy(minTimeMs, () => sessionGoAway(session));
  session.on('ping', () => policy.onPing(performance.now()));
  session.on('stream', (stream: http2.ServerHttp2Stream) => {
    policy.streamOpened();
    stream.once('close', () => policy.streamClosed());
  });
  return policy;
}

function sessionGoAway(session: http2.ServerHttp2Session): void {
  if (session.closed || session.destroyed) return;
  session.goaway(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM, 0, tooManyPings);
  const timer = setTimeout(() => session.destroy(), goAwayFlushMs);
  timer.unref();
  session.once('close', () => clearTimeout(timer));
}
