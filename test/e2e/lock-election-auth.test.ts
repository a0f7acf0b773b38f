/**
 * Issue 20, item 7 (Lock and Election part): under auth, the recipes' internal reads and watches dropped the
 * caller's token, so a contended Lock or Campaign failed ("user name is empty") and its cleanup was refused.
 * Through the gateway with a root token: a second Lock and a second Campaign wait for the first and then win.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, startServer, type ServerProcess } from './harness.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

describe('Lock and Election under auth', () => {
  let member: ServerProcess;
  let token: string;

  async function post(path: string, body: unknown, auth = true): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${member.clientUrl}${path}`, {
      method: 'POST', body: JSON.stringify(body), headers: auth ? { Authorization: token } : {}, signal: AbortSignal.timeout(15_000),
    });
    return { status: res.status, body: JSON.parse(await res.text()) as Record<string, unknown> };
  }

  async function lease(): Promise<string> {
    const r = await post('/v3/lease/grant', { TTL: 60 });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.ID as string;
  }

  beforeAll(async () => {
    member = await startServer({ name: 'lock-auth', args: ['--cluster-init', '--bcrypt-cost', '4'] });
    for (const [path, body] of [
      ['/v3/auth/user/add', { name: 'root', password: 'pw' }],
      ['/v3/auth/user/grant', { user: 'root', role: 'root' }],
      ['/v3/auth/enable', {}],
    ] as const) expect((await post(path, body, false)).status).toBe(200);
    token = (await post('/v3/auth/authenticate', { name: 'root', password: 'pw' }, false)).body.token as string;
  });
  afterAll(killAll);

  it('a contended Lock waits for the holder and then holds it', async () => {
    const first = await post('/v3/lock/lock', { name: b64('l'), lease: await lease() });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const waiting = post('/v3/lock/lock', { name: b64('l'), lease: await lease() });
    await new Promise((r) => setTimeout(r, 500));
    expect((await post('/v3/lock/unlock', { key: first.body.key })).status).toBe(200);
    const second = await waiting;
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect(second.body.key).not.toBe(first.body.key);
  });

  it('a contended Campaign waits for the leader to resign and then leads', async () => {
    const first = await post('/v3/election/campaign', { name: b64('e'), lease: await lease(), value: b64('one') });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const waiting = post('/v3/election/campaign', { name: b64('e'), lease: await lease(), value: b64('two') });
    await new Promise((r) => setTimeout(r, 500));
    expect((await post('/v3/election/resign', { leader: first.body.leader })).status).toBe(200);
    const second = await waiting;
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    const leader = await post('/v3/election/leader', { name: b64('e') });
    expect(Buffer.from((leader.body.kv as { value: string }).value, 'base64').toString()).toBe('two');
  });
});
