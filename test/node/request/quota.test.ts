/** The quota check before a write is proposed: with NOSPACE raised, a write is refused before it takes log space. */
import { describe, expect, it } from 'vitest';
import { EtcdError } from '../../../src/node/errors.js';
import { checkQuota, type QuotaHost } from '../../../src/node/request/quota.js';
import { DiskRoom } from '../../../src/node/request/disk-room.js';

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

  it('drops the disk room\'s last look while NOSPACE refuses, so the first write after a disarm is judged by a fresh one (issue 32)', async () => {
    const alarms = [{ memberId: 1n, alarm: 'NOSPACE' }];
    const { h } = host(alarms);
    const room = new DiskRoom();
    let rechecks = 0;
    room.attach({ recheck: () => void rechecks++ });
    room.observed(10 * 1024 * 1024, 9 * 1024 * 1024, room.mark()); // seen before deletes, compaction and defrag freed space
    h.diskRoom = room;
    await expect(checkQuota(h, 1024 * 1024)).rejects.toBeInstanceOf(EtcdError);
    alarms.length = 0; // `etcdctl alarm disarm`
    await checkQuota(h, 1024 * 1024);
    expect(rechecks).toBe(1);
  });

  it('lets a txn without puts (0 bytes) and any write without NOSPACE through', async () => {
    await checkQuota(host([{ memberId: 2n, alarm: 'NOSPACE' }]).h, 0);
    await checkQuota(host([{ memberId: 2n, alarm: 'CORRUPT' }]).h, 10);
  });
});
