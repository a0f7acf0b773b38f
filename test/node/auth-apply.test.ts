/**
 * Auth in the apply path: writes judged at the auth revision they carry (etcd's authApplierV3), lease revokes
 * needing write on the lease's keys, and the auth state travelling with a Raft snapshot.
 */
import { describe, expect, it } from 'vitest';
import type { AuthInfo } from '../../src/auth/types.js';
import { PermType } from '../../src/auth/types.js';
import { MemoryBackend } from '../../src/mvcc/memory-backend.js';
import type { ApplyResult } from '../../src/node/apply/apply.js';
import type { RaftRequest } from '../../src/node/driver/raft-request.js';
import { ServerState } from '../../src/node/apply/server-state.js';

const b = (s: string): Uint8Array => new Uint8Array(Buffer.from(s));
const options = { quotaBackendBytes: 0, minLeaseTtlSeconds: 1 };
const hash = '$2a$04$abcdefghijklmnopqrstuuZzZzZzZzZzZzZzZzZzZzZzZzZzZzZzZ';
const putReq = (key: string, extra: Partial<{ lease: bigint; prevKv: boolean }> = {}) => ({
  key: b(key), value: b('v'), lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false, ...extra,
});
const put = (key: string, extra: Partial<{ lease: bigint; prevKv: boolean }> = {}): RaftRequest => ({ kind: 'put', put: putReq(key, extra) });

async function withUsers() {
  const state = await ServerState.load(new MemoryBackend(), options);
  let index = 0;
  const apply = (req: RaftRequest, auth?: AuthInfo): ApplyResult => {
    state.store.setConsistentIndex(++index);
    return state.applier.applyRequest(index, auth === undefined ? req : { ...req, auth });
  };
  const errorOf = (r: ApplyResult): string | undefined => (r.ok ? undefined : (r.error as { code: string }).code);
  for (const req of [
    { kind: 'userAdd', name: 'root', hashedPassword: hash, noPassword: false },
    { kind: 'userGrantRole', user: 'root', role: 'root' },
    { kind: 'roleAdd', name: 'w' },
    { kind: 'roleGrantPermission', name: 'w', perm: { permType: PermType.Write, key: b('w/'), rangeEnd: b('w0') } },
    { kind: 'userAdd', name: 'u', hashedPassword: hash, noPassword: false },
    { kind: 'userGrantRole', user: 'u', role: 'w' },
    { kind: 'authEnable' },
  ] as RaftRequest[]) expect(apply(req).ok).toBe(true);
  const root = (): AuthInfo => ({ username: 'root', revision: state.auth.revision });
  const u = (): AuthInfo => ({ username: 'u', revision: state.auth.revision });
  return { state, apply, errorOf, root, u };
}

describe('auth in apply', () => {
  it('judges writes with the auth info and revision they carry', async () => {
    const { state, apply, errorOf, root, u } = await withUsers();
    expect(errorOf(apply(put('w/a')))).toBe('userEmpty');
    expect(errorOf(apply(put('w/a'), u()))).toBeUndefined();
    expect(errorOf(apply(put('x'), u()))).toBe('permissionDenied');
    expect(errorOf(apply(put('w/a', { prevKv: true }), u()))).toBe('permissionDenied'); // prev_kv needs read
    expect(errorOf(apply({ kind: 'deleteRange', deleteRange: { key: b('w/'), rangeEnd: b('w0'), prevKv: false } }, u()))).toBeUndefined();
    const nested: RaftRequest = { kind: 'txn', txn: { compare: [], success: [{ txn: { compare: [], success: [{ put: putReq('x') }], failure: [] } }], failure: [] } };
    expect(errorOf(apply(nested, u()))).toBe('permissionDenied');
    const stale = u();
    expect(apply({ kind: 'roleAdd', name: 'other' }, root()).ok).toBe(true);
    expect(errorOf(apply(put('w/a'), stale))).toBe('authOldRevision');
    expect(errorOf(apply({ kind: 'roleAdd', name: 'third' }, u()))).toBe('permissionDenied');
    expect(state.store.range({ key: b('x'), rangeEnd: b(''), limit: 0, revision: 0, sortOrder: 0, sortTarget: 0, serializable: true, keysOnly: false, countOnly: true, minModRevision: 0, maxModRevision: 0, minCreateRevision: 0, maxCreateRevision: 0 }).count).toBe(0);
  });

  it('refuses to revoke a lease, or attach to one, holding keys the user may not write', async () => {
    const { apply, errorOf, root, u } = await withUsers();
    expect(apply({ kind: 'leaseGrant', leaseId: 7n, ttlSeconds: 60 }, u()).ok).toBe(true);
    expect(apply(put('secret', { lease: 7n }), root()).ok).toBe(true);
    expect(errorOf(apply(put('w/a', { lease: 7n }), u()))).toBe('permissionDenied');
    expect(errorOf(apply({ kind: 'leaseRevoke', leaseId: 7n }, u()))).toBe('permissionDenied');
    expect(apply({ kind: 'leaseRevoke', leaseId: 7n }, root()).ok).toBe(true);
  });

  it('carries users, roles and the enabled flag in a Raft snapshot', async () => {
    const { state } = await withUsers();
    await state.store.flush();
    const exported = await state.store.exportSnapshot();
    const chunks: Uint8Array[] = [];
    for await (const c of exported.chunks()) chunks.push(c);
    await exported.view.close();
    const restored = await ServerState.restore(new MemoryBackend(), Buffer.concat(chunks), options);
    expect([restored.auth.enabled, restored.auth.revision, restored.auth.userList(), restored.auth.roleList()])
      .toEqual([true, state.auth.revision, ['root', 'u'], ['w']]);
    expect(restored.auth.roleGet('w')).toEqual(state.auth.roleGet('w'));
  });
});
