/** Whole-index walks over a store's core, for tests and metrics (never on a request path). */
import { assert } from '../base/assert.js';
import type { MvccCore } from './kv-core.js';
import { codeMain } from './rev-code.js';

/**
 * What the store's retained byte arrays hold against what their backing buffers occupy (index keys,
 * unflushed values, cached values). A kept view into a pooled or shared buffer (a request's decode buffer,
 * msgpackr's pack buffer) shows as backing ≫ bytes.
 */
export function retainedBytes(core: MvccCore): { bytes: number; backing: number } {
  let bytes = 0;
  let backing = 0;
  const count = (b: Uint8Array): void => {
    bytes += b.byteLength;
    backing += b.buffer.byteLength;
  };
  for (const ki of core.tree.all()) count(ki.key);
  for (const b of core.values.retained()) count(b);
  return { bytes, backing };
}

/** Keys currently live. */
export function liveKeyCount(core: MvccCore): number {
  let n = 0;
  for (const ki of core.tree.all()) if (ki.current() !== undefined) n++;
  return n;
}

export function checkCoreInvariants(core: MvccCore): void {
  core.tree.checkInvariants();
  let prev = -1;
  for (const code of core.log) {
    assert(code > prev, 'revision log order');
    prev = code;
  }
  assert(core.log.length === 0 || codeMain(core.log.at(core.log.length - 1)) <= core.currentRev, 'revision log beyond the current revision');
}
