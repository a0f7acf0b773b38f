/**
 * The embedded client under auth (issue 20, item 7): without a user every call fails with etcd's
 * `etcdserver: user name is empty`, as a gRPC client's does; `client.authenticate(user, password)` gives a
 * client that calls as that user and logs in again when its token goes stale, as etcd's clientv3 does.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedClient, EtcdError, startEtcetera, type Etcetera } from '../../src/index.js';
import type { RequestContext } from '../../src/node/server-api.js';
import type { WatchResponse } from '../../src/mvcc/watch-types.js';
import { freePort, removeDir, tempDir, waitFor } from './harness.js';

const tokenTtlSeconds = 1;
const userEmpty = 'etcdserver: user name is empty';

function root(): RequestContext {
  return { requireLeader: false, signal: new AbortController().signal };
}

const text = (b: Uint8Array): string => Buffer.from(b).toString();

describe('the embedded client under auth', () => {
  let member: Etcetera;
  let dir: string;

  async function start(): Promise<Etcetera> {
    const [c, p] = [await freePort(), await freePort()];
    return startEtcetera({
      name: 'host',
      dataDir: dir,
      listenClientUrls: [`http://127.0.0.1:${c}`],
      listenPeerUrls: [`http://127.0.0.1:${p}`],
      storageProfile: 'ssd',
      auth: { token: 'simple', bcryptCost: 4, tokenTtlSeconds },
    });
  }

  beforeAll(async () => {
    dir = tempDir('embedded-auth');
    member = await start();
    const auth = member.api.authApi!;
    const noHash = { hashedPassword: '', noPassword: false };
    await auth.userAdd({ name: 'root', password: 'rootpw', ...noHash }, root());
    await auth.userGrantRole('root', 'root', root());
    await auth.roleAdd('app', root());
    await auth.roleGrantPermission('app', { permType: 2, key: Buffer.from('app/'), rangeEnd: Buffer.from('app0') }, root());
    await auth.userAdd({ name: 'app', password: 'apppw', ...noHash }, root());
    await auth.userGrantRole('app', 'app', root());
    await auth.authEnable(root());
  }, 30_000);

  afterAll(async () => {
    await member.close();
    removeDir(dir);
  });

  it("refuses a client without a user with etcd's error, for every kind of call", async () => {
    const refusal = (p: Promise<unknown>): Promise<unknown> => p.then(() => 'served', (err: unknown) => err);
    const calls = [() => member.client.put('app/a', '1'), () => member.client.get('app/a'), () => member.client.delete('app/a')];
    for (const call of calls) {
      const err = await refusal(call());
      expect(err).toBeInstanceOf(EtcdError);
      expect((err as EtcdError).message).toBe(userEmpty);
    }
    const seen: WatchResponse[] = [];
    const w = member.client.watch({ key: Buffer.from('app/a') }, (r) => seen.push(r));
    await waitFor('the refusal', async () => (seen.length > 0 ? seen : undefined));
    expect(seen[0]).toMatchObject({ canceled: true, cancelReason: `rpc error: code = InvalidArgument desc = ${userEmpty}` });
    w.cancel();
  });

  it('authenticates, then puts, gets and watches as that user, and only within its range', async () => {
    await expect(member.client.authenticate('app', 'wrong')).rejects.toThrow(/^etcdserver: authentication failed, invalid user ID or password$/);
    const app = await member.client.authenticate('app', 'apppw');
    const events: string[] = [];
    const w = app.watch({ key: Buffer.from('app/'), rangeEnd: Buffer.from('app0') }, (r) => {
      for (const e of r.events) events.push(`${text(e.kv.key)}=${text(e.kv.value)}`);
    });
    await app.put('app/a', '1');
    expect(text((await app.get('app/a')).kvs[0]!.value)).toBe('1');
    await expect(app.put('other', '1')).rejects.toThrow(/^etcdserver: permission denied$/);
    await waitFor('the watch event', async () => (events.length > 0 ? events : undefined));
    expect(events).toEqual(['app/a=1']);
    w.cancel();
    // The constructor option does the same, logging in on its first call.
    const byOption = new EmbeddedClient(member.api, { user: { name: 'app', password: 'apppw' } });
    expect(text((await byOption.get('app/a')).kvs[0]!.value)).toBe('1');
    expect(() => new EmbeddedClient(member.api, { user: { name: '', password: 'x' } })).toThrow(TypeError);
    expect(() => new EmbeddedClient(member.api, { usr: {} } as never)).toThrow(TypeError);
  });

  it('logs in again when its token has expired, for calls and for a watch', async () => {
    const app = await member.client.authenticate('app', 'apppw');
    await app.put('app/b', '1');
    // Simple tokens expire --auth-token-ttl after their last use.
    await new Promise((r) => setTimeout(r, tokenTtlSeconds * 1000 + 500));
    await app.put('app/b', '2');
    await new Promise((r) => setTimeout(r, tokenTtlSeconds * 1000 + 500));
    const events: string[] = [];
    const refusals: string[] = [];
    const w = app.watch({ key: Buffer.from('app/b') }, (r) => {
      if (r.canceled) refusals.push(r.cancelReason);
      for (const e of r.events) events.push(text(e.kv.value));
    });
    await waitFor('the watch is created or refused', async () => (refusals.length > 0 || ((await app.put('app/b', '3')) && events.length > 0) ? true : undefined));
    expect(refusals).toEqual([]);
    w.cancel();
  });

  it('logs in again when a restart of the member made its token stale', async () => {
    // A host that restarts the member in process and keeps its client: the client reaches whichever member
    // runs now, through this forwarding API, and still holds the token the old one issued.
    const current = new Proxy({} as Etcetera['api'], {
      get: (_target, prop) => {
        const value: unknown = Reflect.get(member.api, prop);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(member.api) : value;
      },
    });
    const app = new EmbeddedClient(current, { user: { name: 'app', password: 'apppw' } });
    await app.put('app/c', '1');
    await member.close();
    member = await start();
    await waitFor('a leader', async () => (member.api.hasLeader() ? true : undefined));
    // The restarted member forgot every simple token: the put is refused `invalid auth token`, and retried
    // after a new login.
    await app.put('app/c', '2');
    expect(text((await app.get('app/c')).kvs[0]!.value)).toBe('2');
    await expect(member.client.get('app/c')).rejects.toThrow(userEmpty);
  }, 30_000);
});
