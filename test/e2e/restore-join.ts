/**
 * The check after any restore (issue 25's O1, issue 36's restore from the bucket): two members join the
 * restored one with `--server URL --token T`, every key reaches every member, HashKV agrees, then the
 * restored member is killed and the joiners carry on with every key, revisions continuing from the backup's.
 */
import { expect } from 'vitest';
import type { Etcd3 } from 'etcd3';
import { clientOf, etcdctl, startServer, waitFor, waitForVoters, type ServerProcess } from './harness.js';

export async function joinThenKillRestored(r: ServerProcess, token: string, revision: number, prefix: string, keyCount: number): Promise<void> {
  const count = async (c: Etcd3): Promise<number> =>
    Number((await c.kv.range({ key: Buffer.from(prefix), range_end: prefixEnd(prefix), count_only: true, serializable: true })).count);
  const joiners: ServerProcess[] = [];
  for (const name of ['j1', 'j2']) {
    joiners.push(await startServer({ name, args: ['--server', r.clientUrl, '--token', token] }));
  }
  const all = [r, ...joiners];
  const clients = all.map((m) => clientOf(m));
  await waitForVoters(clients[0]!, 3, { timeoutMs: 60_000 });
  for (const [i, c] of clients.entries()) {
    await waitFor(`every key on ${all[i]!.name}`, async () => ((await count(c)) === keyCount ? true : undefined), 60_000);
  }
  const marker = await clients[0]!.put('marker').value('1').exec();
  const at = Number(marker.header.revision);
  // Revisions continue from the backup's (a client retry under load may add one more write).
  expect(at).toBeGreaterThan(revision);
  expect(at).toBeLessThan(revision + 5);
  for (const c of clients) await waitFor('the marker everywhere', async () => ((await c.get('marker').string()) === '1' ? true : undefined), 30_000);
  const hashes = await etcdctl(all.map((m) => m.clientUrl), ['endpoint', 'hashkv', `--rev=${at}`, '-w', 'json']);
  expect(hashes.code).toBe(0);
  const byMember = (JSON.parse(hashes.stdout) as Array<{ HashKV: { hash: number } }>).map((h) => h.HashKV.hash);
  expect(byMember.length).toBe(3);
  expect(new Set(byMember).size).toBe(1);

  await r.kill('SIGKILL');
  const survivor = clients[1]!;
  await waitFor('a leader among the joiners', async () => ((await survivor.maintenance.status()).leader !== '0' ? true : undefined), 30_000);
  const after = await waitFor('a write without the restored member', async () => survivor.put('after-kill').value('1').exec(), 30_000);
  expect(Number(after.header.revision)).toBeGreaterThan(at);
  expect(Number(after.header.revision)).toBeLessThan(at + 5);
  for (const c of clients.slice(1)) {
    const list = await c.getAll().prefix(prefix).keys();
    expect(list.length).toBe(keyCount);
  }
  for (const j of joiners) await j.kill('SIGKILL');
}

function prefixEnd(prefix: string): Buffer {
  const b = Buffer.from(prefix);
  b[b.length - 1]! += 1;
  return b;
}
