/**
 * Issue 20, item 1: one HTTP/1.1 request whose body breaks off (the client disconnects mid-body, half-closes
 * it, or breaks its chunked framing) or nests too deep stopped the member: the rejection escaped an
 * un-awaited promise. Each case is sent on a raw socket to a real member; afterwards the process must be
 * running, answer a put, and still hold every acknowledged write. The statuses expected are etcd 3.4's,
 * checked against a real etcd when one is installed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Etcd3 } from 'etcd3';
import { clientOf, killAll, sleep, startServer, type ServerProcess } from './harness.js';
import { sendRaw, statusOf, type RawOptions } from './raw-socket.js';
import { haveEtcd, startRealEtcd } from './real-etcd.js';

const head = (path: string, extra: string): string => `POST ${path} HTTP/1.1\r\nHost: x\r\n${extra}\r\n`;
const deepTxn = (depth: number): string =>
  `${'{"success":[{"request_txn":'.repeat(depth)}{}${'}]}'.repeat(depth)}`;
const sized = (path: string, body: string): string => `${head(path, `Content-Length: ${Buffer.byteLength(body)}\r\n`)}${body}`;

interface Case {
  name: string;
  bytes: string;
  raw: RawOptions;
  /** etcd 3.4's status, when it answers at all (a client that went away gets nothing). */
  status?: number;
}

const cases: Case[] = [
  { name: 'the issue repro: Content-Length 10, body "{", then the client disconnects', bytes: `${head('/v3/kv/range', 'Content-Length: 10\r\n')}{`, raw: { then: 'close' } },
  { name: 'a put body cut by a half-close', bytes: `${head('/v3/kv/put', 'Content-Length: 50\r\n')}{"key":"YQ=="`, raw: { then: 'half' }, status: 400 },
  { name: 'a chunk length that is not hex', bytes: `${head('/v3/kv/range', 'Transfer-Encoding: chunked\r\n')}zz\r\n{}\r\n0\r\n\r\n`, raw: { then: 'wait' }, status: 400 },
  { name: 'a chunked body cut mid-chunk, then a disconnect', bytes: `${head('/v3/kv/txn', 'Transfer-Encoding: chunked\r\n')}40\r\n{"compare":[`, raw: { then: 'close' } },
  { name: 'a watch body cut mid-object, then a disconnect', bytes: `${head('/v3/watch', 'Content-Length: 100\r\n')}{"create_request":{"key":"YQ=="}}{"cre`, raw: { then: 'close' } },
  { name: 'a keep-alive stream with broken chunk framing', bytes: `${head('/v3/lease/keepalive', 'Transfer-Encoding: chunked\r\n')}2\r\n{}\r\nxx\r\n`, raw: { then: 'wait' } },
  { name: 'an election observe cut by a half-close', bytes: `${head('/v3/election/observe', 'Content-Length: 30\r\n')}{"name":`, raw: { then: 'half' }, status: 400 },
  { name: 'a txn nested 5000 deep', bytes: sized('/v3/kv/txn', deepTxn(5000)), raw: { then: 'half', waitMs: 2000 }, status: 400 },
];

describe('a gateway request that breaks off ends that request, never the member', () => {
  let member: ServerProcess;
  let client: Etcd3;
  const acked = new Map<string, string>();

  beforeAll(async () => {
    member = await startServer({ name: 'cut', args: ['--cluster-init'] });
    client = clientOf(member);
    for (let i = 0; i < 5; i++) {
      await client.put(`before-${i}`).value(`v${i}`);
      acked.set(`before-${i}`, `v${i}`);
    }
  });
  afterAll(killAll);

  async function stillServes(label: string): Promise<void> {
    // The crash came on the next turns of the event loop after the socket closed.
    await sleep(200);
    expect(member.proc.exitCode, `member exited after ${label}:\n${member.output.slice(-20).join('\n')}`).toBe(null);
    const key = `after-${acked.size}`;
    await client.put(key).value(label);
    acked.set(key, label);
    for (const [k, v] of acked) expect(await client.get(k).string()).toBe(v);
  }

  for (const c of cases) {
    it(c.name, async () => {
      const answer = await sendRaw(member.clientPort, c.bytes, c.raw);
      if (c.status !== undefined) expect(statusOf(answer), answer).toBe(c.status);
      await stillServes(c.name);
    });
  }

  it('answers as etcd 3.4 does where etcd answers', async () => {
    if (!haveEtcd()) return;
    const etcd = await startRealEtcd('cut');
    try {
      const port = Number(new URL(etcd.clientUrl).port);
      for (const c of cases.filter((x) => x.status !== undefined)) {
        expect(statusOf(await sendRaw(port, c.bytes, c.raw)), c.name).toBe(c.status);
      }
    } finally {
      await etcd.stop();
    }
  });
});
