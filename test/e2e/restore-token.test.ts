/**
 * A cluster restored with etcdctl's default token (`etcd-cluster`, public: it opens no joins) takes a secret
 * at a restart with --token, and then accepts joins (issue 32, item 5: the restart was refused, and the only
 * way out was restoring again).
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { clientOf, closeClients, killAll, runCli, startServer, tempDir, waitFor } from './harness.js';

afterAll(async () => {
  closeClients();
  await killAll();
});

describe('a restore with the default token', () => {
  it('a restart with --token adopts it and the cluster accepts joins with it', async () => {
    const src = await startServer({ name: 'src', args: ['--cluster-init'] });
    await clientOf(src).put('restored').value('yes');
    const work = tempDir('restore-token');
    const file = join(work, 'snap.db');
    expect((await runCli(['snapshot', 'save', file, '--endpoints', src.clientUrl], 60_000)).code).toBe(0);
    await src.kill();

    // Restored with etcdctl's defaults: token etcd-cluster. The peer URL is the one the restart listens on.
    const first = await startServer({ name: 'r', waitReady: false });
    await first.kill(); // only to pick two free ports with the harness
    const peerUrl = first.peerUrl;
    const dataDir = join(work, 'r');
    const restored = await runCli(['snapshot', 'restore', file, '--data-dir', dataDir, '--name', 'r', '--initial-cluster', `r=${peerUrl}`, '--initial-advertise-peer-urls', peerUrl], 60_000);
    expect(restored.code).toBe(0);

    const r = await startServer({ name: 'r', dataDir, clientPort: first.clientPort, peerPort: first.peerPort, args: ['--token', 'now-a-secret'] });
    expect(r.output.join('\n')).toContain("adopted --token in place of etcd's public default");
    expect(r.output.join('\n')).not.toContain('joins are refused');
    const joiner = await startServer({ name: 'j', args: ['--server', peerUrl, '--token', 'now-a-secret'] });
    expect(await waitFor('the joiner serving the restored key', async () => (await clientOf(joiner).get('restored').string()) ?? undefined, 60_000)).toBe('yes');

    // Kept: a later restart without --token uses it, and another token is refused again.
    await r.kill('SIGTERM');
    const again = await startServer({ name: 'r', dataDir, clientPort: first.clientPort, peerPort: first.peerPort });
    expect(again.output.join('\n')).not.toContain('joins are refused');
    await again.kill('SIGTERM');
    const other = await startServer({ name: 'r', dataDir, clientPort: first.clientPort, peerPort: first.peerPort, waitReady: false, args: ['--token', 'yet-another'] });
    expect(await other.exited).toBe(1);
    expect(other.output.join('\n')).toContain('--token differs from the token this member joined its cluster with');
  }, 180_000);
});
