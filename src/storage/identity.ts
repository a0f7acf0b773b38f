/**
 * Who this member is, kept in its data directory: `<data-dir>/member/identity` (member id, cluster id, name,
 * join token, first peers, last URLs and --wal-dir; JSON, written whole, durably). Used by main's bootstrap (a new
 * or restarting member) and by backup's restore and migration, which build a data directory a member then starts
 * from; the ids and first log entries of a static cluster are node/membership/new-cluster.ts.
 */
import { join } from 'node:path';
import { readFile } from 'node:fs/promises';
import { writeFileAtomically } from '../wal/atomic-file.js';
import { NodeFsPort } from '../wal/fs-port.js';
import type { MemberUrlKey } from '../config/member-options.js';

const nodeFs = new NodeFsPort();

export interface Identity {
  memberId: bigint;
  clusterId: bigint;
  name: string;
  /** The cluster's join token (absent in data directories written before it was stored here). */
  token?: string;
  /**
   * The members known when this one joined: the peers to talk to until the replicated member list has
   * caught up (a new member learns it from the leader's log or snapshot, which needs a working transport).
   */
  joinPeers: Array<{ id: bigint; peerUrls: string[] }>;
  /** The URLs the member last ran with: a restart that names none of them uses these (main/registered-urls.ts). */
  urls?: MemberUrls;
  /** The --wal-dir the member last ran with (absolute): a restart without --wal-dir uses it (issue 32, item 5). */
  walDir?: string;
}

/** A member's URL options, as kept in its identity. */
export type MemberUrls = Record<MemberUrlKey, string[]>;

export async function readIdentity(memberDir: string): Promise<Identity | undefined> {
  let text: string;
  try {
    text = await readFile(join(memberDir, 'identity'), 'utf8');
  } catch {
    return undefined;
  }
  const j = JSON.parse(text) as {
    memberId: string; clusterId: string; name: string; token?: string; joinPeers?: Array<{ id: string; peerUrls: string[] }>; urls?: MemberUrls; walDir?: string;
  };
  return {
    ...(j.urls !== undefined ? { urls: j.urls } : {}),
    ...(j.walDir !== undefined ? { walDir: j.walDir } : {}),
    memberId: BigInt(`0x${j.memberId}`),
    clusterId: BigInt(`0x${j.clusterId}`),
    name: j.name,
    ...(j.token !== undefined ? { token: j.token } : {}),
    joinPeers: (j.joinPeers ?? []).map((p) => ({ id: BigInt(`0x${p.id}`), peerUrls: p.peerUrls })),
  };
}

export async function writeIdentity(memberDir: string, id: Identity): Promise<void> {
  const text = JSON.stringify({
    memberId: id.memberId.toString(16),
    clusterId: id.clusterId.toString(16),
    name: id.name,
    token: id.token,
    joinPeers: id.joinPeers.map((p) => ({ id: p.id.toString(16), peerUrls: p.peerUrls })),
    urls: id.urls,
    walDir: id.walDir,
  });
  await writeFileDurably(memberDir, 'identity', `${text}\n`);
}

/** A text file written whole or not at all (wal/atomic-file.ts), mode 0600: the token and the identity are secrets. */
export function writeFileDurably(dir: string, name: string, text: string): Promise<void> {
  return writeFileAtomically(nodeFs, join(dir, name), new TextEncoder().encode(text));
}
