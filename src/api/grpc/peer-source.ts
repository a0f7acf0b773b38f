/**
 * A call's source for password checks (RequestContext.source), from what grpc-js's server call reports as its
 * peer: `${remoteAddress}:${remotePort}` ("127.0.0.1:5000", "::ffff:10.0.0.1:5000", "::1:5000"), or
 * "unknown" when the connection has no address (a repaired connection handed over as a Duplex). The gateway's
 * calls report the same form. Client-side forms ("ipv4:1.2.3.4:5", "ipv6:[::1]:5") are read too.
 *
 * An IPv4 address (also IPv4-mapped IPv6) is a source by itself; an IPv6 address counts by its /64, the
 * block a single host or site is usually given (and can pick addresses from at will).
 */
import { isIPv4, isIPv6 } from 'node:net';

/** The source of every in-process call (the embedded client). */
export const localSource = 'local';

export function peerSource(peer: string): string {
  const address = hostOf(peer.replace(/^ipv[46]:/, ''));
  if (isIPv4(address)) return address;
  if (!isIPv6(address)) return peer;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped !== null && isIPv4(mapped[1]!)) return mapped[1]!;
  return `${expandIPv6(address).slice(0, 4).join(':')}::/64`;
}

/** The address without its port: "[a]:p" and "a:p" (grpc-js writes IPv6 unbracketed: its last ":p" is the port). */
function hostOf(peer: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(peer);
  if (bracketed !== null) return bracketed[1]!;
  const withPort = /^(.+):\d+$/.exec(peer);
  if (withPort !== null && (isIPv4(withPort[1]!) || isIPv6(withPort[1]!))) return withPort[1]!;
  return peer;
}

/** The eight 16-bit groups of an IPv6 address, as lower-case hex without leading zeros. */
function expandIPv6(address: string): string[] {
  const plain = address.replace(/%.*$/, ''); // a zone ("fe80::1%eth0") names an interface, not a host
  const [head, tail] = plain.includes('::') ? plain.split('::') : [plain, undefined];
  const groups = (part: string | undefined): string[] => (part === undefined || part === '' ? [] : part.split(':'));
  const h = groups(head);
  const t = groups(tail);
  // An embedded IPv4 tail ("::1.2.3.4") is two groups; only the first four groups matter here.
  const tailGroups = t.flatMap((g) => (g.includes('.') ? ['0', '0'] : [g]));
  const middle = tail === undefined ? [] : Array.from({ length: 8 - h.length - tailGroups.length }, () => '0');
  return [...h, ...middle, ...tailGroups].map((g) => parseInt(g, 16).toString(16));
}
