/**
 * etcd's client ping floor (--grpc-keepalive-min-time; grpc-go's keepalive.EnforcementPolicy with MinTime set and
 * PermitWithoutStream false, as etcd configures it). grpc-go's rule, which we follow move for move:
 * - a ping that comes sooner than MinTime after the previous one, while the connection has a call open, is a
 *   strike; with no call open the floor is two hours (grpc-go's defaultPingTimeout: keepalive without streams is
 *   not permitted at all);
 * - the server sending headers or data resets the strikes (its answer may be what made the client ping, e.g.
 *   grpc-go's BDP estimator), and the ping after that reset is not judged;
 * - the third strike (more than maxPingStrikes = 2) is answered GOAWAY ENHANCE_YOUR_CALM with debug data
 *   "too_many_pings", and the connection is closed. grpc clients then double their keepalive interval.
 * Node acknowledges every ping itself; we only watch them ('ping' event).
 */
import * as http2 from 'node:http2';

/** grpc-go's maxPingStrikes: strikes tolerated before GOAWAY. */
const pingStrikesMax = 2;
/** grpc-go's defaultPingTimeout: the floor for pings while no call is open (PermitWithoutStream false). */
const idlePingFloorMs = 2 * 60 * 60 * 1000;
/** How long the GOAWAY has to reach the client before the connection is destroyed. */
const goAwayFlushMs = 100;
const tooManyPings = Buffer.from('too_many_pings');

export class PingPolicy {
  readonly #session: http2.ServerHttp2Session;
  readonly #minTimeMs: number;
  #lastPingAt = -Infinity;
  #strikes = 0;
  #resetStrikes = false;
  #goneAway = false;
  /** Streams open on the connection (grpc-go's len(activeStreams)). */
  #openStreams = 0;

  constructor(session: http2.ServerHttp2Session, minTimeMs: number) {
    this.#session = session;
    this.#minTimeMs = minTimeMs;
    session.on('ping', () => this.#onPing(performance.now()));
    session.on('stream', (stream: http2.ServerHttp2Stream) => {
      this.#openStreams++;
      stream.once('close', () => this.#openStreams--);
    });
  }

  /** The server sent headers or data on this connection: the next ping is not judged and the strikes clear. */
  sent(): void {
    this.#resetStrikes = true;
  }

  #onPing(now: number): void {
    const last = this.#lastPingAt;
    this.#lastPingAt = now;
    if (this.#resetStrikes) {
      this.#resetStrikes = false;
      this.#strikes = 0;
      return;
    }
    const floorMs = this.#openStreams > 0 ? this.#minTimeMs : idlePingFloorMs;
    if (now - last < floorMs) this.#strikes++;
    if (this.#strikes > pingStrikesMax && !this.#goneAway) this.#goAway();
  }

  #goAway(): void {
    this.#goneAway = true;
    const session = this.#session;
    if (session.closed || session.destroyed) return;
    session.goaway(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM, 0, tooManyPings);
    const timer = setTimeout(() => session.destroy(), goAwayFlushMs);
    timer.unref();
    session.once('close', () => clearTimeout(timer));
  }
}
