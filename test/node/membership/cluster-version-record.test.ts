/** The committed cluster version in the member list (src/node/membership/membership.ts). */
import { describe, expect, it } from 'vitest';
import { WriteBuffer } from '../../../src/mvcc/backend.js';
import { MemoryBackend } from '../../../src/mvcc/memory-backend.js';
import { Membership } from '../../../src/node/membership/membership.js';
import { decodeMembersEntry, encodeMemberEntry } from '../../../src/storage/members-bucket.js';

describe('the cluster version record', () => {
  it('is kept beside the members, survives a reload, and is no member to a reader that knows none', async () => {
    const backend = new MemoryBackend();
    const buffer = new WriteBuffer();
    const first = await Membership.load(backend);
    expect(first.clusterVersion).toBeUndefined();
    first.upsert({ id: 7n, name: 'a', peerUrls: ['http://127.0.0.1:2380'], clientUrls: [], isLearner: false }, buffer);
    first.setClusterVersion('0.2', buffer);
    await backend.write(buffer.take());
    const again = await Membership.load(backend);
    expect(again.clusterVersion).toBe('0.2');
    expect(again.list().map((m) => m.id)).toEqual([7n]);
    // Builds before 0.2 read the bucket through the same 9-byte member keys: the record is not one of them.
    const keys: Uint8Array[] = [];
    for await (const [key] of backend.scan('members')) keys.push(key);
    expect(keys.map((k) => k.length).sort((x, y) => x - y)).toEqual([9, 14]);
    const [memberKey] = encodeMemberEntry({ id: 7n, name: 'a', peerUrls: [], clientUrls: [], isLearner: false });
    expect(memberKey.length).toBe(9);
    expect(decodeMembersEntry(new TextEncoder().encode('clusterVersion'), new TextEncoder().encode('0.2'))).toEqual({ kind: 'clusterVersion', version: '0.2' });
  });
});
