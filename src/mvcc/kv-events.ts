/** The store's revision log read back as watch events (a watcher catching up from a past revision). */
import type { MvccCore } from './kv-core.js';
import { codeIsTombstone, codeMain } from './rev-code.js';
import { EventType, MvccError, type Event } from './types.js';

/** Events with revision in [from, to], in order, prevKv included when still available. */
export function readEvents(core: MvccCore, fromRevision: number, toRevision: number): Event[] {
  // As ranges: a revision below the compact revision is gone, the compact revision itself is still readable.
  if (fromRevision > 0 && fromRevision < core.compactRev) throw new MvccError('compacted');
  const log = core.log;
  const events: Event[] = [];
  for (let i = log.lowerBoundMain(fromRevision); i < log.length; i++) {
    const code = log.at(i);
    const main = codeMain(code);
    if (main > toRevision) break;
    const kv = core.values.read(code);
    const event: Event = { type: codeIsTombstone(code) ? EventType.Delete : EventType.Put, kv };
    // etcd reads prevKv at main - 1, unless that is compacted.
    if (main - 1 >= core.compactRev) {
      const ki = core.tree.get(kv.key);
      const prev = ki?.get(main - 1);
      if (prev !== undefined) event.prevKv = core.values.read(prev, ki!.key);
    }
    events.push(event);
  }
  return events;
}
