import { describe, expect, it } from 'vitest';
import { RepeatedWarnings } from '../../src/config/repeated-warnings.js';
import type { LogFields, Logger } from '../../src/config/log.js';

function recording(): { logger: Logger; lines: Array<[string, LogFields | undefined]> } {
  const lines: Array<[string, LogFields | undefined]> = [];
  const logger = { warn: (msg: string, fields?: LogFields) => void lines.push([msg, fields]) } as unknown as Logger;
  return { logger, lines };
}

describe('RepeatedWarnings', () => {
  it('logs the first of a kind at once, then one per interval with the count not logged', () => {
    const { logger, lines } = recording();
    let now = 0;
    const w = new RepeatedWarnings(logger, 10_000, () => now);
    // A refused snapshot tried again every 100 ms for 25 s.
    for (; now < 25_000; now += 100) w.warn('send 2', 'snapshot send failed', { peer: '2' });
    expect(lines).toEqual([
      ['snapshot send failed', { peer: '2' }],
      ['snapshot send failed', { peer: '2', repeatsNotLogged: 99 }],
      ['snapshot send failed', { peer: '2', repeatsNotLogged: 99 }],
    ]);
  });

  it('keeps kinds apart, and a success makes the next failure news again', () => {
    const { logger, lines } = recording();
    let now = 0;
    const w = new RepeatedWarnings(logger, 10_000, () => now);
    w.warn('send 2', 'snapshot send failed', { peer: '2' });
    w.warn('send 3', 'snapshot send failed', { peer: '3' });
    now = 50;
    w.warn('send 2', 'snapshot send failed', { peer: '2' });
    w.clear('send 2');
    now = 100;
    w.warn('send 2', 'snapshot send failed', { peer: '2' });
    expect(lines.map(([, f]) => f)).toEqual([{ peer: '2' }, { peer: '3' }, { peer: '2' }]);
  });
});
