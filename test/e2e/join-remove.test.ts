/**
 * Issue 20, item 3: the Join service on the client port served memberRemove for any member to whoever held
 * the join token. Its only legitimate caller is a joiner removing its own learner after a failed start
 * (test/e2e/join.test.ts covers that path); a running voter, the leader or a caught-up member must stay.
 */
import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { afterAll, describe, expect, it } from 'vitest';
import { pack } from '../../src/storage/entry-codec.js';
import { joinServiceDefinition, type JoinReply } from '../../src/join/join-service.js';
import { tokenMac } from '../../src/peer/handshake.js';
import { clientOf, killAll, memberList, startServer, waitForVoters } from './harness.js';

/** One authenticated Join call, as a token holder would make it. */
async function joinCall(clientUrl: string, token: string, method: string, payload: unknown): Promise<JoinReply> {
  const client = new grpc.Client(new URL(clientUrl).host, grpc.credentials.createInsecure());
  const unary = (name: 'Challenge' | 'Call', request: unknown): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const d = joinServiceDefinition[name]!;
      client.makeUnaryRequest(d.path, d.requestSerialize, d.responseDeserialize, request, { deadline: Date.now() + 10_000 }, (e, v) => (e ? reject(e) : resolve(v)));
    });
  try {
    const { nonce } = (await unary('Challenge', {})) as { nonce: Uint8Array };
    const clientNonce = randomBytes(32);
    const body = pack(payload);
    return (await unary('Call', { nonce, clientNonce, method, body, mac: tokenMac(token, 'client', [nonce, clientNonce, method, body]) })) as JoinReply;
  } finally {
    client.close();
  }
}

describe('the Join service removes no member that runs', () => {
  afterAll(killAll);

  it('refuses memberRemove of a running voter and of the leader, even with the right token', async () => {
    const token = 'join-remove-token';
    const a = await startServer({ name: 'jra', args: ['--cluster-init', '--token', token] });
    const b = await startServer({ name: 'jrb', args: ['--server', a.clientUrl, '--token', token] });
    const ca = clientOf(a);
    const voters = await waitForVoters(ca, 2, { what: 'b promoted to voter', timeoutMs: 30_000 });
    for (const m of voters) {
      const reply = await joinCall(a.clientUrl, token, 'memberRemove', { id: BigInt(m.id) });
      expect(reply.ok, `memberRemove ${m.name}: ${JSON.stringify(reply)}`).toBe(false);
    }
    expect((await memberList(ca)).map((m) => m.name).sort()).toEqual(['jra', 'jrb']);
    await ca.put('still').value('serving');
    expect(await clientOf(b).get('still').string()).toBe('serving');
  }, 60_000);
});
