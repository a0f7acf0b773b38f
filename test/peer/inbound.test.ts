/** What an authenticated peer's Messages frame may hold (src/peer/inbound.ts): malformed ones never reach Raft. */
import { describe, expect, it } from 'vitest';
import { validateMessages } from '../../src/peer/inbound.js';
import { MessageType, type Message } from '../../src/raft/types.js';

const heartbeat = (extra: Partial<Message> = {}): Message => ({
  type: MessageType.Heartbeat, from: 1n, to: 2n, term: 3, logTerm: 0, index: 0, entries: [], commit: 5, reject: false, rejectHint: 0, ...extra,
});

describe('validateMessages', () => {
  it('a heartbeat to a witness may carry the index every data voter holds (issue 24)', () => {
    expect(validateMessages([heartbeat({ dataDurableIndex: 4 })], 1n, 2n)).toHaveLength(1);
    expect(validateMessages([heartbeat()], 1n, 2n)).toHaveLength(1);
  });

  it('refuses a dataDurableIndex that is not a safe non-negative integer', () => {
    for (const bad of [-1, 1.5, Number.NaN, 2 ** 60, '4'] as unknown[]) {
      expect(validateMessages([heartbeat({ dataDurableIndex: bad as number })], 1n, 2n), String(bad)).toBeUndefined();
    }
  });

  it('refuses a message from or to another member than the connection\'s', () => {
    expect(validateMessages([heartbeat()], 9n, 2n)).toBeUndefined();
    expect(validateMessages([heartbeat()], 1n, 9n)).toBeUndefined();
  });
});
