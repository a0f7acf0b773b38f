/**
 * A restart needs only --name and --data-dir (etcd's rule; k3s keeps the URLs in its own config). Every URL
 * option left at its default takes the URL the member last ran with (kept in its identity file), or, for a
 * member built by a restore or migration (which never ran), what its cluster knows it by: its peer URLs and
 * published client URLs in the replicated member list. Before this, such a restart listened on
 * 127.0.0.1:2379/2380 while its peers dialled the registered URLs: a member without a leader, silently
 * (issue 25, item 3).
 *
 * Worked example: bootstrapped with `--listen-peer-urls http://10.0.0.5:2380 --listen-client-urls
 * http://10.0.0.5:2379`, restarted with `--name a --data-dir D`: it listens on 10.0.0.5 again. Restarted with
 * `--listen-peer-urls http://10.0.0.6:2380`: it listens there (an explicit flag always wins), warns that the
 * cluster still knows it as 10.0.0.5, and remembers 10.0.0.6 for the next restart.
 */
import { memberUrlKeys, type MemberOptions, type MemberUrlKey } from '../config/member-options.js';
import type { Member } from '../node/api-types.js';
import type { MemberUrls } from '../storage/identity.js';

export type { MemberUrls };

export function urlsOf(o: MemberOptions): MemberUrls {
  return Object.fromEntries(memberUrlKeys.map((k) => [k, o[k]])) as MemberUrls;
}

/** What the member list says, as URL options (absent where it says nothing). */
function knownUrls(known: Member | undefined): Partial<MemberUrls> {
  if (known === undefined) return {};
  const peers = known.peerUrls.length > 0 ? { listenPeerUrls: known.peerUrls, initialAdvertisePeerUrls: known.peerUrls } : {};
  const clients = known.clientUrls.length > 0 ? { listenClientUrls: known.clientUrls, advertiseClientUrls: known.clientUrls } : {};
  return { ...peers, ...clients };
}

/** The options a restart runs with: defaulted URLs replaced by the stored ones, or by the member list's. */
export function withRegisteredUrls(o: MemberOptions, stored: MemberUrls | undefined, known: Member | undefined): { options: MemberOptions; adopted: MemberUrlKey[] } {
  const fallback = knownUrls(known);
  const options: MemberOptions = { ...o };
  const adopted: MemberUrlKey[] = [];
  for (const k of o.defaultedUrls ?? []) {
    const urls = stored?.[k] ?? fallback[k];
    if (urls === undefined || sameUrls(urls, o[k])) continue;
    options[k] = urls;
    adopted.push(k);
  }
  return { options, adopted };
}

/**
 * A member advertising or listening on other peer URLs than its cluster knows it by is unreachable for its
 * peers (they dial the registered URLs): one sentence naming both and the two ways out, or undefined.
 */
export function peerUrlMismatch(o: MemberOptions, known: Member | undefined): string | undefined {
  if (known === undefined || known.peerUrls.length === 0) return undefined;
  const advertised = !sameUrls(known.peerUrls, o.initialAdvertisePeerUrls);
  const ports = new Set(o.listenPeerUrls.map(portOf));
  const unheard = known.peerUrls.filter((u) => !ports.has(portOf(u)) && !ports.has('0'));
  if (!advertised && unheard.length === 0) return undefined;
  return `the cluster knows this member by peer URLs ${known.peerUrls.join(',')}, but it advertises ${o.initialAdvertisePeerUrls.join(',')} ` +
    `and listens on ${o.listenPeerUrls.join(',')}: its peers dial the registered URLs and will not reach it. Restart with ` +
    `--listen-peer-urls and --initial-advertise-peer-urls ${known.peerUrls.join(',')}, or change the registration with ` +
    `\`etcdctl member update ${known.id.toString(16)} --peer-urls=${o.initialAdvertisePeerUrls.join(',')}\``;
}

/**
 * --wal-dir is remembered as the URLs are (issue 32, item 5): a restart without it uses the one the member
 * last ran with, so a separate log disk cannot be forgotten on the next restart. Given, it wins (and a
 * --wal-dir without the log is refused before anything changes: storage/wal-dir.ts, start-checks.ts).
 */
export function withRememberedWalDir(o: MemberOptions, identity: { walDir?: string }): MemberOptions {
  if (o.walDir !== undefined || identity.walDir === undefined) return o;
  o.logger.info('restarting with the --wal-dir this member ran with', { walDir: identity.walDir });
  return { ...o, walDir: identity.walDir };
}

function sameUrls(a: readonly string[], b: readonly string[]): boolean {
  return [...a].sort().join(',') === [...b].sort().join(',');
}

function portOf(url: string): string {
  const u = new URL(url.includes('://') ? url : `http://${url}`);
  return u.port !== '' ? u.port : u.protocol === 'https:' ? '443' : '80';
}
