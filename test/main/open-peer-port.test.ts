/** Issue 20, item 2: the startup warning for a peer port anyone can use. */
import { describe, expect, it } from 'vitest';
import type { MemberOptions } from '../../src/config/member-options.js';
import { openPeerPortWarning } from '../../src/main/open-peer-port.js';

const staticBootstrap = (clusterToken: string): MemberOptions['bootstrap'] => ({ kind: 'static', initialCluster: [], state: 'new', clusterToken });

const cases: Array<[string, string[], MemberOptions['bootstrap'], string, boolean]> = [
  ['a static cluster on all interfaces with its cluster token warns', ['http://0.0.0.0:2380'], staticBootstrap('prod-1'), 'prod-1', true],
  ['etcd\'s public default token warns whatever the bootstrap (a restart)', ['http://10.0.0.5:2380'], { kind: 'init' }, 'etcd-cluster', true],
  ['an IPv6 wildcard counts as beyond loopback', ['http://[::]:2380'], staticBootstrap('t'), 't', true],
  ['loopback only is quiet', ['http://127.0.0.1:2380', 'http://[::1]:2380', 'http://localhost:2380'], staticBootstrap('t'), 't', false],
  ['peer TLS is quiet', ['https://0.0.0.0:2380'], staticBootstrap('t'), 't', false],
  ['a secret --token is quiet', ['http://0.0.0.0:2380'], staticBootstrap('prod-1'), 'K10secret', false],
  ['a generated token (--cluster-init) is quiet', ['http://0.0.0.0:2380'], { kind: 'init' }, 'K10abc', false],
];

describe('the open peer port warning', () => {
  for (const [name, listenPeerUrls, bootstrap, token, warns] of cases) {
    it(name, () => {
      const warning = openPeerPortWarning({ listenPeerUrls, bootstrap }, token);
      expect(warning !== undefined, warning).toBe(warns);
      if (warns) expect(warning).toMatch(/^the peer port is open: .* listens beyond loopback without peer TLS/);
    });
  }
});
