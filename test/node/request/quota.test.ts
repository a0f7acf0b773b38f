/** The quota check before a write is proposed: with NOSPACE raised, a write is refused before it takes log space. */
import { describe, expect, it } from 'vitest';
import { EtcdError } from '../../../src/node/errors.js';
import { checkQuota, type QuotaHost } from '../../../src/node/request/quota.js';

function host(alarms: Array<{ memberId: bigint; alarm: string }>): { h: QuotaHost; proposed: unknown[] } {
  const proposed: unknown[] = [];
  const state = { alarms: { list: () => alarms }, store: { overQuota: () => false, reclaim: async () => {}, dbSizeBytes: () => 0 } };
  const h = {
    memberId: 1n,
    state: () => state,
    proposer: { propose: async (r: unknown) => void proposed.push(r) },
    logger: { warn: () => {}, info: () => {} },
  } as unknown as QuotaHost;
  return { h, proposed };
}

describe('checkQuota', () => {
  it('refuses a write while any member has NOSPACE raised, before proposing it', async () => {
    const { h, proposed } = host([{ memberId: 2n, alarm: 'NOSPACE' }]);
    const err = await checkQuota(h, 10).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(EtcdError);
    expect((err as Error).message).toBe('etcdserver: mvcc: database space exceeded');
    expect(proposed).toEqual([]);
  });

  it('lets a txn without puts (0 bytes) and any write without NOSPACE through', async () => {
    await checkQuota(host([{ memberId: 2n, alarm: 'NOSPACE' }]).h, 0);
    await checkQuota(host([{ memberId: 2n, alarm: 'CORRUPT' }]).h, 10);
  });
});
