/** The restore's "start it with" hint names the client URL the member will serve on (issue 32, item 5). */
import { describe, expect, it } from 'vitest';
import { startCommand } from '../../src/backup/snapshot-cli.js';

const cluster = (peer: string) => ({ name: 'm1', initialCluster: [{ name: 'm1', peerUrls: [peer] }], clusterToken: 't', initialAdvertisePeerUrls: [peer] });

describe('the start command printed after a restore', () => {
  it.each([
    { peer: 'http://10.0.0.1:2380', client: 'http://10.0.0.1:2379' },
    { peer: 'http://127.0.0.1:22380', client: 'http://127.0.0.1:22379' },
    { peer: 'https://[fd00::1]:2380', client: 'https://[fd00::1]:2379' },
  ])('a member restored at $peer serves clients on $client, beside its peer URL', ({ peer, client }) => {
    const cmd = startCommand('/d', cluster(peer), undefined);
    expect(cmd).toBe(`npx etcetera server --name m1 --data-dir /d --listen-peer-urls ${peer} --initial-advertise-peer-urls ${peer} --listen-client-urls ${client} --advertise-client-urls ${client}`);
  });

  it('names the --wal-dir it was restored with', () => {
    expect(startCommand('/d', cluster('http://10.0.0.1:2380'), '/logs/wal')).toContain('--data-dir /d --wal-dir /logs/wal --listen-peer-urls');
  });
});
