/**
 * Pure helpers that shape a watcher's events into responses: filtering and prevKv projection, cutting a
 * catch-up batch at a revision boundary, and etcd's fragmenting of an oversized response (sendFragments in
 * api/v3rpc/watch.go).
 */
import { assert } from '../base/index.js';
import { EventType, type Event, type KeyValue } from './types.js';
import { watcherMatches, type Watcher } from './watch-group.js';
import type { WatchResponse } from './watch-types.js';

/**
 * The events of one write (or of a history window) this watcher should see: in its range, at or after its next
 * revision, not filtered out, prevKv only when asked. Store events are shared between watchers and never mutated.
 */
export function projectEvents(w: Watcher, events: readonly Event[], checkRange: boolean): Event[] {
  const out: Event[] = [];
  for (const ev of events) {
    if (ev.kv.modRevision < w.minRevision) continue;
    if (checkRange && !watcherMatches(w, ev.kv.key)) continue;
    if (ev.type === EventType.Put ? w.noPut : w.noDelete) continue;
    if (w.prevKv || ev.prevKv === undefined) out.push(ev);
    else out.push({ type: ev.type, kv: ev.kv });
  }
  return out;
}

/** An estimate of an event's protobuf size: bytes plus a bound on tags, lengths and varints. */
export function eventBytes(ev: Event): number {
  return 4 + kvBytes(ev.kv) + (ev.prevKv === undefined ? 0 : kvBytes(ev.prevKv));
}

function kvBytes(kv: KeyValue): number {
  return kv.key.length + kv.value.length + 48;
}

export interface Batch {
  events: Event[];
  /** The revision after the last one included: where the next batch starts. */
  nextRevision: number;
}

/**
 * Takes whole revisions from `events` (sorted by revision, all ≥ fromRevision) until `revisionsMax` distinct
 * revisions or `bytesMax` bytes; at least one revision is always taken, so progress is guaranteed. When every
 * event fits, nextRevision is `toRevision + 1` (the window is exhausted even where it had no events).
 */
export function cutBatch(events: readonly Event[], toRevision: number, revisionsMax: number, bytesMax: number): Batch {
  let revisions = 0;
  let bytes = 0;
  let lastRevision = 0;
  for (let i = 0; i < events.length; i++) {
    const ev = events[i]!;
    const rev = ev.kv.modRevision;
    assert(rev >= lastRevision, 'history events out of revision order');
    if (rev !== lastRevision) {
      if (revisions >= revisionsMax || (revisions > 0 && bytes >= bytesMax)) {
        return { events: events.slice(0, i), nextRevision: rev };
      }
      revisions++;
      lastRevision = rev;
    }
    bytes += eventBytes(ev);
  }
  return { events: events.slice(), nextRevision: toRevision + 1 };
}

/**
 * etcd's sendFragments: a response of at least two events larger than bytesMax is split into pieces of at
 * most bytesMax (each at least one event), all marked fragment=true but the last.
 */
export function fragmentResponse(response: WatchResponse, bytesMax: number): WatchResponse[] {
  const events = response.events;
  if (events.length < 2) return [response];
  let total = 0;
  for (const ev of events) total += eventBytes(ev);
  if (total < bytesMax) return [response];
  const pieces: WatchResponse[] = [];
  let current: Event[] = [];
  let bytes = 0;
  for (const ev of events) {
    const size = eventBytes(ev);
    if (current.length > 0 && bytes + size >= bytesMax) {
      pieces.push({ ...response, events: current, fragment: true });
      current = [];
      bytes = 0;
    }
    current.push(ev);
    bytes += size;
  }
  pieces.push({ ...response, events: current, fragment: false });
  return pieces;
}
