/**
 * The Join service's challenge and reply rules (issue 20, items 4 and 5), driven through its handlers:
 * a flood of challenges evicts nobody's; a caller that has not proved the token gets no token-keyed reply
 * (no offline oracle); a challenge serves one call and expires.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type * as grpc from '@grpc/grpc-js';
import { joinService, replyMacParts, type JoinReply } from '../../src/join/join-service.js';
import { tokenMac, macEquals } from '../../src/peer/handshake.js';
import { pack, unpack } from '../../src/storage/entry-codec.js';

const token = 'a-real-secret';

function service(): { challenge(): Promise<Uint8Array>; call(req: unknown): Promise<JoinReply> } {
  const impl = joinService({
    token,
    handle: (method) => Promise.resolve({ served: method }),
    describeError: (e) => ({ error: String(e) }),
  });
  const run = <T>(name: string, request: unknown): Promise<T> =>
    new Promise((resolve, reject) => {
      const h = impl[name] as grpc.handleUnaryCall<unknown, unknown>;
      h({ request } as grpc.ServerUnaryCall<unknown, unknown>, (err, value) => (err ? reject(err) : resolve(value as T)));
    });
  return {
    challenge: async () => (await run<{ nonce: Uint8Array }>('Challenge', {})).nonce,
    call: (req) => run<JoinReply>('Call', req),
  };
}

function signedCall(nonce: Uint8Array, macToken = token): Record<string, unknown> & { clientNonce: Buffer; nonce: unknown } {
  const clientNonce = randomBytes(32);
  const body = Buffer.from(pack({}));
  return { nonce, clientNonce, method: 'members', body, mac: tokenMac(macToken, 'client', [nonce, clientNonce, 'members', body]) };
}

function signedByServer(reply: JoinReply, req: { clientNonce: Buffer; nonce: unknown }): boolean {
  return macEquals(reply.mac, tokenMac(token, 'server', [req.clientNonce, req.nonce as Uint8Array, ...replyMacParts(reply)]));
}

describe('the Join service', () => {
  it('keeps serving a joiner\'s challenge after a flood of 10,000 others', async () => {
    const s = service();
    const mine = await s.challenge();
    for (let i = 0; i < 10_000; i++) await s.challenge();
    const req = signedCall(mine);
    const reply = await s.call(req);
    expect(reply.ok, JSON.stringify(reply)).toBe(true);
    expect(signedByServer(reply, req)).toBe(true);
    expect(unpack(reply.ok ? reply.body : new Uint8Array())).toEqual({ served: 'members' });
  });

  it('answers a call with a wrong MAC without any MAC, so the reply tests no guess at the token', async () => {
    const s = service();
    const req = signedCall(await s.challenge(), 'a-guess');
    const reply = await s.call(req);
    expect(reply).toMatchObject({ ok: false, auth: true });
    expect(reply.mac.length).toBe(0);
  });

  it('answers a call on a nonce it never issued without any MAC', async () => {
    const s = service();
    const other = service();
    for (const nonce of [randomBytes(40), await other.challenge(), 'x', null]) {
      const req = { ...signedCall(nonce instanceof Uint8Array ? nonce : Buffer.alloc(0)), nonce };
      const reply = await s.call(req);
      expect(reply).toMatchObject({ ok: false, error: 'join challenge expired or unknown' });
      expect(reply.mac.length).toBe(0);
    }
  });

  it('serves one call per challenge: a recorded call replayed is refused', async () => {
    const s = service();
    const req = signedCall(await s.challenge());
    expect((await s.call(req)).ok).toBe(true);
    const again = await s.call(req);
    expect(again.ok).toBe(false);
    expect(signedByServer(again, req)).toBe(true);
  });

  it('refuses a malformed call, whatever its shape, unsigned', async () => {
    const s = service();
    for (const request of [null, 7, 'x', [], { clientNonce: randomBytes(3) }, { clientNonce: randomBytes(32), body: 'x' }]) {
      const reply = await s.call(request);
      expect(reply).toMatchObject({ ok: false });
      expect(reply.mac.length).toBe(0);
    }
  });
});
