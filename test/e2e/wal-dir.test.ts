/**
 * `--wal-dir` inside the data directory (etcd's own default path, `<data-dir>/member/wal`, which etcd's
 * functional tester and deployments that name every path pass explicitly) and outside it (a separate disk
 * for the log), for each way a member comes to be: a new cluster (--cluster-init, static --initial-cluster),
 * a join (--server/--token), a restore, and a restart of each (issue 25, item 5). Before the fix, a new
 * cluster with --wal-dir=<data-dir>/member/wal lost its bootstrap entries (the bootstrap wrote them there,
 * then replaced the member directory) and never elected a leader; a restored member started with a
 * --wal-dir outside the data directory served from an empty log.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { clientOf, closeClients, exitWithin, freePort, killAll, runCli, startServer, tempDir, waitFor, waitForVoters, type ServerProcess } from './harness.js';

afterAll(async () => {
  closeClients();
  await killAll();
}, 30_000);

type Where = 'inside' | 'outside';

function walDirFor(where: Where, dataDir: string): string {
  return where === 'inside' ? join(dataDir, 'member/wal') : join(tempDir('waldisk'), 'wal');
}

function segments(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).filter((n) => n.endsWith('.wal')) : [];
}

/** Bounded: a member that lost its bootstrap entries never elects a leader. */
async function leader(sp: ServerProcess): Promise<void> {
  const c = clientOf(sp);
  await waitFor(`a leader seen by ${sp.name}`, async () => ((await c.maintenance.status()).leader !== '0' ? true : undefined), 15_000);
}

async function leaderAndKey(sp: ServerProcess, key: string, value: string): Promise<void> {
  const c = clientOf(sp);
  await leader(sp);
  await waitFor(`${key} on ${sp.name}`, async () => ((await c.get(key).string()) === value ? true : undefined), 15_000);
}

/** Restart with the shortest command line plus --wal-dir, after a SIGKILL. */
async function restart(sp: ServerProcess, walDir: string): Promise<ServerProcess> {
  await sp.kill('SIGKILL');
  return startServer({ name: sp.name, dataDir: sp.dataDir, clientPort: sp.clientPort, peerPort: sp.peerPort, args: ['--wal-dir', walDir] });
}

function expectLogIn(walDir: string, dataDir: string, where: Where): void {
  expect(segments(walDir).length).toBeGreaterThan(0);
  if (where === 'outside') expect(segments(join(dataDir, 'member/wal'))).toEqual([]);
}

describe.each<Where>(['inside', 'outside'])('--wal-dir %s the data directory', (where) => {
  it('a new cluster (--cluster-init), a member joining it (--server/--token), both restarted', async () => {
    const token = `wal-dir-${where}`;
    const aData = tempDir('wa');
    const aWal = walDirFor(where, aData);
    let a = await startServer({ name: 'wa', dataDir: aData, args: ['--cluster-init', '--token', token, '--wal-dir', aWal] });
    await leader(a);
    await clientOf(a).put('k1').value('v1');
    expectLogIn(aWal, aData, where);

    const bData = tempDir('wb');
    const bWal = walDirFor(where, bData);
    let b = await startServer({ name: 'wb', dataDir: bData, args: ['--server', a.clientUrl, '--token', token, '--wal-dir', bWal] });
    await leaderAndKey(b, 'k1', 'v1');
    await waitForVoters(clientOf(a), 2, { what: 'wb promoted', timeoutMs: 30_000 });
    expectLogIn(bWal, bData, where);

    a = await restart(a, aWal);
    b = await restart(b, bWal);
    await leaderAndKey(a, 'k1', 'v1');
    await clientOf(b).put('k2').value('v2');
    await leaderAndKey(a, 'k2', 'v2');
    await a.kill('SIGKILL');
    await b.kill('SIGKILL');
  }, 120_000);

  it('a new static cluster (--initial-cluster), restarted', async () => {
    const dataDir = tempDir('ws');
    const walDir = walDirFor(where, dataDir);
    const peerPort = await freePort();
    const peerUrl = `http://127.0.0.1:${peerPort}`;
    let sp = await startServer({
      name: 'ws', dataDir, peerPort,
      args: ['--initial-cluster', `ws=${peerUrl}`, '--initial-cluster-state', 'new', '--initial-cluster-token', 'static-tok', '--wal-dir', walDir],
    });
    await leader(sp);
    await clientOf(sp).put('s').value('1');
    expectLogIn(walDir, dataDir, where);
    sp = await restart(sp, walDir);
    await leaderAndKey(sp, 's', '1');
    await sp.kill('SIGKILL');
  }, 120_000);

  it('a restore (snapshot restore --wal-dir), started and restarted', async () => {
    const src = await startServer({ name: 'wsrc', args: ['--cluster-init'] });
    const c = clientOf(src);
    for (let i = 0; i < 20; i++) await c.put(`r${i}`).value(`v${i}`);
    const file = join(tempDir('wsnap'), 'snap.db');
    const saved = await runCli(['snapshot', 'save', file, '--endpoints', src.clientUrl]);
    expect(saved.code, saved.stderr).toBe(0);
    await src.kill('SIGKILL');

    const dataDir = join(tempDir('wr'), 'd');
    const walDir = walDirFor(where, dataDir);
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const restored = await runCli(['snapshot', 'restore', file, '--data-dir', dataDir, '--wal-dir', walDir, '--name', 'wr', '--initial-cluster', `wr=${url}`, '--initial-advertise-peer-urls', url]);
    expect(restored.code, restored.stderr).toBe(0);
    expectLogIn(walDir, dataDir, where);
    let sp = await startServer({ name: 'wr', dataDir, peerPort: port, args: ['--wal-dir', walDir] });
    await leaderAndKey(sp, 'r19', 'v19');
    await clientOf(sp).put('after').value('x');
    sp = await restart(sp, walDir);
    await leaderAndKey(sp, 'after', 'x');
    await leaderAndKey(sp, 'r0', 'v0');
    await sp.kill('SIGKILL');
  }, 120_000);

  it('a cluster reset from a snapshot (--cluster-reset-restore-path), then started', async () => {
    const dataDir = tempDir('wz');
    const walDir = walDirFor(where, dataDir);
    const a = await startServer({ name: 'wz', dataDir, args: ['--cluster-init', '--token', 'wz-tok', '--wal-dir', walDir] });
    await leader(a);
    for (let i = 0; i < 10; i++) await clientOf(a).put(`z${i}`).value(`v${i}`);
    const file = join(tempDir('wzsnap'), 'snap.db');
    const saved = await runCli(['snapshot', 'save', file, '--endpoints', a.clientUrl]);
    expect(saved.code, saved.stderr).toBe(0);
    await clientOf(a).put('late').value('not in the snapshot');
    await a.kill('SIGKILL');
    const reset = await startServer({
      name: 'wz', dataDir, clientPort: a.clientPort, peerPort: a.peerPort, waitReady: false,
      args: ['--cluster-reset', '--cluster-reset-restore-path', file, '--token', 'wz-tok', '--wal-dir', walDir],
    });
    expect(await exitWithin(reset, 60_000), reset.output.slice(-20).join('\n')).toBe(0);
    const r = await startServer({ name: 'wz', dataDir, clientPort: a.clientPort, peerPort: a.peerPort, args: ['--wal-dir', walDir] });
    await leaderAndKey(r, 'z9', 'v9');
    expect(await clientOf(r).get('late').string()).toBeNull();
    expectLogIn(walDir, dataDir, where);
    await r.kill('SIGKILL');
  }, 120_000);
});

describe('the log in another place than the start names', () => {
  it('is refused, naming where the log is, instead of starting from an empty log', async () => {
    const file = join(tempDir('wmsnap'), 'snap.db');
    const src = await startServer({ name: 'wmsrc', args: ['--cluster-init'] });
    await clientOf(src).put('m').value('1');
    expect((await runCli(['snapshot', 'save', file, '--endpoints', src.clientUrl])).code).toBe(0);
    await src.kill('SIGKILL');

    // Restored without --wal-dir, started with one outside the data directory.
    const dataDir = join(tempDir('wm'), 'd');
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    expect((await runCli(['snapshot', 'restore', file, '--data-dir', dataDir, '--name', 'wm', '--initial-cluster', `wm=${url}`, '--initial-advertise-peer-urls', url])).code).toBe(0);
    const elsewhere = join(tempDir('wmwal'), 'wal');
    const wrong = await startServer({ name: 'wm', dataDir, peerPort: port, waitReady: false, args: ['--wal-dir', elsewhere] });
    expect(await exitWithin(wrong, 20_000)).toBe(1);
    expect(wrong.output.join('\n')).toContain(`--wal-dir ${elsewhere} holds no log, but ${join(dataDir, 'member/wal')} does: this member's log is there`);

    // Started with a --wal-dir outside, restarted without it: the member remembers it, as it does its URLs
    // (issue 32, item 5; before, this start was refused).
    const outside = join(tempDir('wmwal2'), 'wal');
    const b = await startServer({ name: 'wmb', args: ['--cluster-init', '--wal-dir', outside] });
    await leader(b);
    await clientOf(b).put('b').value('1');
    await b.kill('SIGKILL');
    const forgot = await startServer({ name: 'wmb', dataDir: b.dataDir, clientPort: b.clientPort, peerPort: b.peerPort });
    expect(forgot.output.join('\n')).toContain(`restarting with the --wal-dir this member ran with","walDir":"${outside}"`);
    await leader(forgot);
    expect(await clientOf(forgot).get('b').string()).toBe('1');
    expect(readdirSync(join(b.dataDir, 'member')).includes('wal')).toBe(false);
    await forgot.kill('SIGTERM');
  }, 120_000);
});
