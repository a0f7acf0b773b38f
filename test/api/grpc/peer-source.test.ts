/** A call's source for password checks: the client's address without its port, an IPv6 address by its /64. */
import { describe, expect, it } from 'vitest';
import { peerSource } from '../../../src/api/grpc/peer-source.js';

describe('peer source', () => {
  it.each([
    ['an IPv4 peer as grpc-js reports it', '127.0.0.2:50123', '127.0.0.2'],
    ['an IPv4-mapped IPv6 peer', '::ffff:10.1.2.3:443', '10.1.2.3'],
    ['IPv6 loopback with its port', '::1:50123', '0:0:0:0::/64'],
    ['an IPv6 peer: its /64, so one host cannot pick a new source per call', '2001:db8:1:2:aaaa::1:7000', '2001:db8:1:2::/64'],
    ['another address in the same /64', '2001:db8:1:2:bbbb:cccc:dddd:eeee:7000', '2001:db8:1:2::/64'],
    ['the client-side ipv4: form', 'ipv4:192.168.1.9:2379', '192.168.1.9'],
    ['the client-side ipv6: form, bracketed', 'ipv6:[2001:db8::7]:2379', '2001:db8:0:0::/64'],
    ['a zoned link-local address', 'fe80::1%eth0:2379', 'fe80:0:0:0::/64'],
    ['a connection without an address', 'unknown', 'unknown'],
  ])('%s', (_what, peer, source) => {
    expect(peerSource(peer)).toBe(source);
  });
});
