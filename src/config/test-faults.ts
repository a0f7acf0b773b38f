/**
 * Test-only switches that break the server on purpose, so the chaos checkers can prove they catch real
 * misbehaviour (L11 in test/GLOSSARY.md). Read once from UNSAFE_ETCETERA_TEST_FAULTS by the CLI (never from the config
 * file or ETCETERA_* variables, so no configuration can turn them on by accident); a member started with any
 * of them logs an error-level warning. Nothing else in the server reads the environment.
 *
 * - drop-watch-event: the first event of the 5th event-bearing watch response on each stream is dropped;
 * - skip-read-index: linearizable reads are served locally without ReadIndex (stale after a partition);
 * - ack-before-persist: Readies are acknowledged as durable before the log has them (a kill -9 loses
 *   acknowledged writes);
 * - skip-snapshot-bridge: a wiring fault of the member factory (src/main/member-factory.ts): a leader's MsgSnap
 *   leaves without the backend streamed behind it, so a follower cannot restore it;
 * - unhandled-rejection, uncaught-exception: once the member runs, a promise rejects with nobody observing it,
 *   or a callback throws (the bugs src/main/process-faults.ts must turn into the member's stop sequence).
 */
import type { WatchSend } from '../mvcc/watch-types.js';

export type TestFault = 'drop-watch-event' | 'skip-read-index' | 'ack-before-persist' | 'skip-snapshot-bridge' | 'unhandled-rejection' | 'uncaught-exception';

export const testFaultsEnv = 'UNSAFE_ETCETERA_TEST_FAULTS';

const known: readonly TestFault[] = ['drop-watch-event', 'skip-read-index', 'ack-before-persist', 'skip-snapshot-bridge', 'unhandled-rejection', 'uncaught-exception'];

export function parseTestFaults(text: string | undefined): Set<TestFault> {
  const out = new Set<TestFault>();
  for (const raw of (text ?? '').split(',')) {
    const name = raw.trim();
    if (name === '') continue;
    if (!(known as readonly string[]).includes(name)) throw new Error(`${testFaultsEnv}: unknown fault ${JSON.stringify(name)} (known: ${known.join(', ')})`);
    out.add(name as TestFault);
  }
  return out;
}

/** unhandled-rejection, uncaught-exception: plant the bug (on the next turn of the event loop). */
export function plantProcessFaults(faults: ReadonlySet<TestFault>): void {
  if (faults.has('unhandled-rejection')) setImmediate(() => void Promise.reject(new Error('test fault: unhandled-rejection')));
  if (faults.has('uncaught-exception')) {
    setImmediate(() => {
      throw new Error('test fault: uncaught-exception');
    });
  }
}

/** Which event-bearing response of a stream loses an event under drop-watch-event. */
export const droppedWatchResponseOrdinal = 5;

/** drop-watch-event: lose one event of one response on a stream (the watch checker must see the gap). */
export function dropOneEvent(send: WatchSend): WatchSend {
  let withEvents = 0;
  return (r) => {
    if (r.events.length === 0 || ++withEvents !== droppedWatchResponseOrdinal) return send(r);
    return send({ ...r, events: r.events.slice(1) });
  };
}
