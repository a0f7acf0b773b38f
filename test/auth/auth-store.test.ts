import { describe, expect, it } from 'vitest';
import { AuthStore, type AuthHooks } from '../../src/auth/auth-store.js';
import { decodeRole, decodeUser, encodeRole, encodeUser } from '../../src/auth/authpb.js';
import { applyAuthRequest, type AuthRequest } from '../../src/auth/requests.js';
import { AuthError, PermType } from '../../src/auth/types.js';
import { WriteBuffer } from '../../src/mvcc/backend.js';
import { MemoryBackend } from '../../src/mvcc/memory-backend.js';

const b = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'latin1'));
const hash = '$2a$04$abcdefghijklmnopqrstuuZzZzZzZzZzZzZzZzZzZzZzZzZzZzZzZ';

async function fresh(): Promise<{ store: AuthStore; backend: MemoryBackend; buffer: WriteBuffer; events: string[] }> {
  const backend = new MemoryBackend();
  const buffer = new WriteBuffer();
  const store = await AuthStore.load(backend, buffer);
  const events: string[] = [];
  const hooks: AuthHooks = {
    enabledChanged: (on) => void events.push(`enabled:${on}`),
    userInvalidated: (name) => void events.push(`invalidated:${name}`),
    authenticated: (name, prefix, index) => void events.push(`token:${name}:${prefix}.${index}`),
  };
  store.setHooks(hooks);
  return { store, backend, buffer, events };
}

function code(f: () => unknown): string | undefined {
  try {
    f();
    return undefined;
  } catch (err) {
    if (err instanceof AuthError) return err.code;
    throw err;
  }
}

describe('auth records', () => {
  it('round-trip users and roles through authpb bytes', () => {
    const u = { name: 'alice', password: hash, roles: ['a', 'b'], noPassword: false };
    expect(decodeUser(encodeUser(u))).toEqual(u);
    const n = { name: 'svc', password: '', roles: [], noPassword: true };
    expect(decodeUser(encodeUser(n))).toEqual(n);
    const r = { name: 'r', keyPermission: [{ permType: PermType.ReadWrite, key: b('k'), rangeEnd: b('\0') }, { permType: PermType.Read, key: b('x'), rangeEnd: b('') }] };
    expect(decodeRole(encodeRole(r))).toEqual(r);
  });

  it('encode a user exactly as etcd stores authpb.User', () => {
    // name "u", password "p", role "r", options {no_password: false} (always present, empty).
    expect([...encodeUser({ name: 'u', password: 'p', roles: ['r'], noPassword: false })]).toEqual([0x0a, 1, 0x75, 0x12, 1, 0x70, 0x1a, 1, 0x72, 0x22, 0]);
  });
});

describe('AuthStore', () => {
  it('refuses to enable auth without a root user holding the root role', async () => {
    const { store } = await fresh();
    expect(code(() => store.enable())).toBe('rootUserNotExist');
    store.userAdd('root', hash, false);
    expect(code(() => store.enable())).toBe('rootRoleNotExist');
    store.userGrantRole('root', 'root');
    store.enable();
    expect(store.enabled).toBe(true);
  });

  it('bumps the auth revision on every change but enabling, as etcd', async () => {
    const { store } = await fresh();
    const steps: Array<[string, () => void, number]> = [
      ['user add', () => store.userAdd('root', hash, false), 2],
      ['grant root', () => store.userGrantRole('root', 'root'), 3],
      ['grant root again (ignored)', () => store.userGrantRole('root', 'root'), 3],
      ['role add', () => store.roleAdd('r'), 4],
      ['grant permission', () => store.roleGrantPermission('r', { permType: PermType.Read, key: b('k'), rangeEnd: b('') }), 5],
      ['enable', () => store.enable(), 5],
      ['enable again', () => store.enable(), 5],
      ['disable', () => store.disable(), 6],
      ['disable again', () => store.disable(), 6],
    ];
    expect(store.revision).toBe(1);
    for (const [name, f, want] of steps) {
      f();
      expect([name, store.revision]).toEqual([name, want]);
    }
  });

  it('answers management refusals with etcd\'s errors', async () => {
    const { store } = await fresh();
    store.userAdd('root', hash, false);
    store.userGrantRole('root', 'root');
    store.roleAdd('root');
    store.roleAdd('r');
    store.enable();
    const cases: Array<[string, () => unknown, string]> = [
      ['empty user name', () => store.userAdd('', hash, false), 'userEmpty'],
      ['duplicate user', () => store.userAdd('root', hash, false), 'userAlreadyExist'],
      ['empty role name', () => store.roleAdd(''), 'roleEmpty'],
      ['duplicate role', () => store.roleAdd('r'), 'roleAlreadyExist'],
      ['grant an unknown role', () => store.userGrantRole('root', 'nope'), 'roleNotFound'],
      ['grant to an unknown user', () => store.userGrantRole('nope', 'r'), 'userNotFound'],
      ['revoke a role not granted', () => store.userRevokeRole('root', 'r'), 'roleNotGranted'],
      ['revoke root from root with auth on', () => store.userRevokeRole('root', 'root'), 'invalidAuthMgmt'],
      ['delete root with auth on', () => store.userDelete('root'), 'invalidAuthMgmt'],
      ['delete the root role with auth on', () => store.roleDelete('root'), 'invalidAuthMgmt'],
      ['delete an unknown role', () => store.roleDelete('nope'), 'roleNotFound'],
      ['no permission given', () => store.roleGrantPermission('r', undefined), 'permissionNotGiven'],
      ['an empty permission key', () => store.roleGrantPermission('r', { permType: PermType.Read, key: b(''), rangeEnd: b('') }), 'invalidAuthMgmt'],
      ['revoke a permission not granted', () => store.roleRevokePermission('r', b('k'), b('')), 'permissionNotGranted'],
      ['get an unknown user', () => store.userGet('nope'), 'userNotFound'],
      ['get an unknown role', () => store.roleGet('nope'), 'roleNotFound'],
    ];
    for (const [name, f, want] of cases) expect([name, code(f)]).toEqual([name, want]);
  });

  it('keeps permissions sorted by key and updates the type of one on the same range', async () => {
    const { store } = await fresh();
    store.roleAdd('r');
    store.roleGrantPermission('r', { permType: PermType.Read, key: b('m'), rangeEnd: b('') });
    store.roleGrantPermission('r', { permType: PermType.Read, key: b('a'), rangeEnd: b('c') });
    store.roleGrantPermission('r', { permType: PermType.Write, key: b('m'), rangeEnd: b('') });
    expect(store.roleGet('r').map((p) => [Buffer.from(p.key).toString(), p.permType])).toEqual([['a', PermType.Read], ['m', PermType.Write]]);
  });

  it('deleting a role takes it from every user; deleting a user or its password invalidates its tokens', async () => {
    const { store, events } = await fresh();
    store.roleAdd('r');
    store.userAdd('u', hash, false);
    store.userGrantRole('u', 'r');
    store.roleDelete('r');
    expect(store.userGet('u')).toEqual([]);
    store.userChangePassword('u', hash);
    store.userDelete('u');
    expect(events).toEqual(['enabled:false', 'invalidated:u', 'invalidated:u']);
  });

  it('judges requests: no user, an old revision, missing permission, root', async () => {
    const { store } = await fresh();
    store.userAdd('root', hash, false);
    store.userGrantRole('root', 'root');
    store.roleAdd('r');
    store.roleGrantPermission('r', { permType: PermType.Read, key: b('k'), rangeEnd: b('') });
    store.userAdd('u', hash, false);
    store.userGrantRole('u', 'r');
    // Auth off: everything passes.
    expect(code(() => store.checkWrite(undefined, b('k'), b('')))).toBeUndefined();
    store.enable();
    const rev = store.revision;
    expect(code(() => store.checkRead(undefined, b('k'), b('')))).toBe('userEmpty');
    expect(code(() => store.checkRead({ username: 'u', revision: rev }, b('k'), b('')))).toBeUndefined();
    expect(code(() => store.checkWrite({ username: 'u', revision: rev }, b('k'), b('')))).toBe('permissionDenied');
    expect(code(() => store.checkRead({ username: 'gone', revision: rev }, b('k'), b('')))).toBe('permissionDenied');
    expect(code(() => store.checkWrite({ username: 'root', revision: rev }, b('anything'), b('\0')))).toBeUndefined();
    store.roleRevokePermission('r', b('k'), b(''));
    expect(code(() => store.checkRead({ username: 'u', revision: rev }, b('k'), b('')))).toBe('authOldRevision');
    expect(code(() => store.checkRead({ username: 'u', revision: store.revision }, b('k'), b('')))).toBe('permissionDenied');
    expect(code(() => store.checkAdmin({ username: 'u', revision: store.revision }))).toBe('permissionDenied');
    expect(code(() => store.checkAdmin({ username: 'gone', revision: store.revision }))).toBe('userNotFound');
    expect(code(() => store.checkAdmin(undefined))).toBe('userEmpty');
  });

  it('applies management requests for root only, except reading oneself and one\'s roles; logins need auth on', async () => {
    const { store, events } = await fresh();
    const apply = (req: AuthRequest, user?: string, index = 1): unknown =>
      applyAuthRequest(store, req, user === undefined ? undefined : { username: user, revision: store.revision }, index);
    apply({ kind: 'userAdd', name: 'root', hashedPassword: hash, noPassword: false });
    apply({ kind: 'userGrantRole', user: 'root', role: 'root' });
    apply({ kind: 'roleAdd', name: 'r' });
    apply({ kind: 'userAdd', name: 'u', hashedPassword: hash, noPassword: false });
    apply({ kind: 'userAdd', name: 'svc', hashedPassword: '', noPassword: true });
    apply({ kind: 'userGrantRole', user: 'u', role: 'r' });
    expect(code(() => apply({ kind: 'authenticate', name: 'u', simpleTokenPrefix: 'p' }))).toBe('authNotEnabled');
    apply({ kind: 'authEnable' }, 'root');
    expect(code(() => apply({ kind: 'userList' }, 'u'))).toBe('permissionDenied');
    expect(code(() => apply({ kind: 'userList' }))).toBe('userEmpty');
    expect(apply({ kind: 'userGet', name: 'u' }, 'u')).toEqual({ roles: ['r'] });
    expect(code(() => apply({ kind: 'userGet', name: 'root' }, 'u'))).toBe('permissionDenied');
    expect(apply({ kind: 'roleGet', role: 'r' }, 'u')).toEqual({ perm: [] });
    expect(apply({ kind: 'userList' }, 'root')).toEqual({ users: ['root', 'svc', 'u'] });
    expect(apply({ kind: 'authenticate', name: 'u', simpleTokenPrefix: 'abc' }, undefined, 42)).toEqual({ revision: store.revision, index: 42 });
    expect(code(() => apply({ kind: 'authenticate', name: 'svc', simpleTokenPrefix: 'abc' }))).toBe('authFailed');
    expect(code(() => apply({ kind: 'authenticate', name: 'nobody', simpleTokenPrefix: 'abc' }))).toBe('authFailed');
    expect(events).toContain('token:u:abc.42');
  });

  it('persists through the write buffer and reloads the same state', async () => {
    const { store, backend, buffer } = await fresh();
    store.userAdd('root', hash, false);
    store.userGrantRole('root', 'root');
    store.roleAdd('r');
    store.roleGrantPermission('r', { permType: PermType.Write, key: b('a'), rangeEnd: b('\0') });
    store.enable();
    store.userAdd('gone', hash, false);
    store.userDelete('gone');
    await backend.write(buffer.take());
    const again = await AuthStore.load(backend, new WriteBuffer());
    expect([again.enabled, again.revision, again.userList(), again.roleList()]).toEqual([true, store.revision, ['root'], ['r']]);
    expect(again.roleGet('r')).toEqual(store.roleGet('r'));
    expect(again.user('root')).toEqual(store.user('root'));
  });
});
