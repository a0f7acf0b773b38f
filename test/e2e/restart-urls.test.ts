/**
 * O2 (issue 25, item 3): a restart with the shortest command line (`--name` and `--data-dir`) listens where the
 * member registered, rejoins its cluster and serves; a restart told other peer URLs than the cluster knows
 * says so, naming both; a restored member started without URL flags listens on the peer URL it was restored
 * with, and the restore prints the exact command. Before, such a restart bound 127.0.0.1:2379/2380 and sat
 * without a leader, logging nothing.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { afterAll, describe, expect, it } from 'vitest';
import { clientOf, cliPath, closeClients, freePort, killAll, runCli, startServer, tempDir, waitFor, waitForVoters, type ServerProcess } from './harness.js';

const extra: Array<() => void> = [];
afterAll(async () => {
  for (const stop of extra) stop();
  closeClients();
  await killAll();
}, 30_000);

/** `etcetera server` with exactly these flags (the harness always adds URL flags). */
function startBare(args: string[]): { output: string[]; exited: Promise<number | string>; stop(): void } {
  const proc = spawn(process.execPath, [cliPath, 'server', '--heartbeat-interval', '100', '--election-timeout', '1000', '--storage-profile', 'ssd', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const collect = (chunk: Buffer): void => void output.push(...chunk.toString('utf8').split('\n').filter((l) => l !== ''));
  proc.stdout!.on('data', collect);
  proc.stderr!.on('data', collect);
  const exited = new Promise<number | string>((res) => proc.once('exit', (code, signal) => res(code ?? signal ?? 'unknown')));
  const stop = (): void => void (proc.exitCode === null && proc.signalCode === null && proc.kill('SIGKILL'));
  extra.push(stop);
  return { output, exited, stop };
}

async function linearizableGet(url: string, key: string): Promise<string | null> {
  const c = new Etcd3({ hosts: url, dialTimeout: 1000 });
  try {
    return await c.get(key).string();
  } finally {
    c.close();
  }
}

describe('restart with the shortest command line (O2)', () => {
  it('a joined member restarted with only --name and --data-dir rejoins on its registered URLs and serves', async () => {
    const token = 'shortest-restart';
    const a = await startServer({ name: 'a', args: ['--cluster-init', '--token', token] });
    const b = await startServer({ name: 'b', args: ['--server', a.clientUrl, '--token', token] });
    const c = await startServer({ name: 'c', args: ['--server', a.clientUrl, '--token', token] });
    const ca = clientOf(a);
    await waitForVoters(ca, 3, { timeoutMs: 30_000 });
    await ca.put('k').value('before');
    await b.kill('SIGTERM');
    await ca.put('k').value('while b was down');

    const again = startBare(['--name', 'b', '--data-dir', b.dataDir]);
    try {
      const got = await waitFor('b serving a linearizable read on its registered client URL', async () => linearizableGet(b.clientUrl, 'k'), 30_000);
      expect(got).toBe('while b was down');
      expect(again.output.join('\n')).toContain('restarting with the URLs this member registered');
      expect(again.output.join('\n')).not.toContain('the cluster knows this member by peer URLs');
    } finally {
      again.stop();
      await again.exited;
    }

    // Told another peer port: it listens there as told, and warns naming both URLs.
    const otherPeer = await freePort();
    const moved = startBare([
      '--name', 'b', '--data-dir', b.dataDir, '--listen-client-urls', b.clientUrl,
      '--listen-peer-urls', `http://127.0.0.1:${otherPeer}`,
    ]);
    try {
      await waitFor('the mismatch warning', async () => moved.output.some((l) => l.includes('the cluster knows this member by peer URLs')) || undefined, 30_000);
      const line = moved.output.find((l) => l.includes('the cluster knows this member by peer URLs'))!;
      expect(line).toContain(b.peerUrl);
      expect(line).toContain(`http://127.0.0.1:${otherPeer}`);
    } finally {
      moved.stop();
      await moved.exited;
    }
    void c;
  }, 180_000);

  it('a restored member started without peer URL flags listens on the peer URL it was restored with; the restore prints the command', async () => {
    const src: ServerProcess = await startServer({ name: 'src', args: ['--cluster-init'] });
    const cs = clientOf(src);
    await cs.put('restored').value('yes');
    const work = tempDir('restart-restored');
    const file = join(work, 'snap.db');
    expect((await runCli(['snapshot', 'save', file, '--endpoints', src.clientUrl], 60_000)).code).toBe(0);
    await src.kill();
    const peerPort = await freePort();
    const clientPort = await freePort();
    const peerUrl = `http://127.0.0.1:${peerPort}`;
    const dataDir = join(work, 'r');
    const out = await runCli(['snapshot', 'restore', file, '--data-dir', dataDir, '--name', 'r', '--initial-cluster', `r=${peerUrl}`, '--initial-advertise-peer-urls', peerUrl, '--initial-cluster-token', 'restored-secret'], 60_000);
    expect(out.code).toBe(0);
    expect(out.stdout).toContain(`start it with: npx etcetera server --name r --data-dir ${dataDir} --listen-peer-urls ${peerUrl} --initial-advertise-peer-urls ${peerUrl}`);
    const clientUrl = `http://127.0.0.1:${clientPort}`;
    const r = startBare(['--name', 'r', '--data-dir', dataDir, '--listen-client-urls', clientUrl]);
    try {
      const served = await waitFor('the restored member serving', async () => linearizableGet(clientUrl, 'restored'), 30_000).catch((e: unknown) => {
        throw new Error(`${String(e)}\n${r.output.slice(-20).join('\n')}`);
      });
      expect(served).toBe('yes');
      // Its peer port is the registered one: a join through it reaches the member.
      const joiner = await startServer({ name: 'j', args: ['--server', peerUrl, '--token', 'restored-secret'] });
      expect(await waitFor('the joiner serving the data', async () => linearizableGet(joiner.clientUrl, 'restored'), 60_000)).toBe('yes');
    } finally {
      r.stop();
      await r.exited;
    }
  }, 180_000);
});
