import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/config/log.js';

describe('JSON-lines logger', () => {
  const make = (level: 'debug' | 'info' | 'warn' = 'info') => {
    const lines: string[] = [];
    const logger = createLogger({ level, sink: (l) => lines.push(l), now: () => 'T', exit: (code) => { throw new Error(`exit ${code}`); } });
    return { logger, lines };
  };

  it('writes one JSON object per line with level, ts, msg and fields', () => {
    const { logger, lines } = make();
    logger.info('started', { port: 2379, id: 0xffffffffffffffffn, key: Buffer.from('ab'), err: new Error('boom') });
    expect(lines).toHaveLength(1);
    expect(lines[0]?.endsWith('\n')).toBe(true);
    const rec = JSON.parse(lines[0] as string);
    expect(rec).toMatchObject({ level: 'info', ts: 'T', msg: 'started', port: 2379, id: '18446744073709551615', key: '6162' });
    expect(rec.err.message).toBe('boom');
  });

  it('filters by level and keeps child fields, without letting fields overwrite level/ts/msg', () => {
    const { logger, lines } = make('warn');
    const child = logger.child({ component: 'raft', msg: 'x' });
    child.info('hidden');
    child.warn('shown', { peer: 'a' });
    expect(lines.map((l) => JSON.parse(l))).toEqual([{ level: 'warn', ts: 'T', msg: 'shown', component: 'raft', 'field.msg': 'x', peer: 'a' }]);
    expect(logger.isEnabled('debug')).toBe(false);
    expect(logger.isEnabled('error')).toBe(true);
  });

  it('fatal writes the line and exits with status 1', () => {
    const { logger, lines } = make();
    expect(() => logger.fatal('fsync failed', { path: '/d' })).toThrow('exit 1');
    expect(JSON.parse(lines[0] as string)).toMatchObject({ level: 'fatal', msg: 'fsync failed', path: '/d' });
  });

  it('rejects an unknown level', () => {
    expect(() => createLogger({ level: 'loud' as 'info' })).toThrow(/unknown log level/);
  });
});
