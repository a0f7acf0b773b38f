/**
 * Bootstrap: who this member is, in which cluster, with which join token, decided once and kept in the data
 * directory. A restart needs only --name and --data-dir (etcd's rule); --cluster-init, --server and the
 * static flags matter only for a data directory that holds no member yet.
 *
 * Atomic (issue 12, item 8): a new member is prepared in `<data-dir>/member.bootstrap/` (identity with the
 * token, and for a new cluster the WAL with its bootstrap entries), fsynced, then renamed to
 * `<data-dir>/member/` and the data directory fsynced. A crash at any step leaves either no member (the
 * leftover temp directory is removed and bootstrap starts over) or a complete one.
 *
 *   <data-dir>/token              the join token, for the operator (written when generated at --cluster-init)
 *   <data-dir>/member/identity    member id, cluster id, name, join token, first peers (JSON, written once)
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, readdir, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { hex } from '../base/hex.js';
import type { Entry, HardState } from '../raft/types.js';
import { NodeFsPort } from '../wal/fs-port.js';
import { Wal } from '../wal/wal.js';
import type { Member } from '../node/server-api.js';
import type { AskOptions } from '../join/join-client.js';
import { peerTlsOf } from './member-etcd-options.js';
import type { MemberOptions } from '../config/member-options.js';
import { urlsOf } from './registered-urls.js';
import { checkListeners } from './listeners-free.js';
import { isSecretToken } from '../join/join-secret.js';
import { memberWalDir, walDirWhileBuilding } from '../storage/wal-dir.js';
import { buildVersion } from '../config/build-info.js';
import { newDataVersion, readDataVersion, startRefusal, writeDataVersion } from './data-version.js';
import { readIdentity, writeFileDurably, writeIdentity, type Identity } from '../storage/identity.js';
import { bootstrapEntries, staticCluster } from '../node/membership/new-cluster.js';

const nodeFs = new NodeFsPort();

export interface Bootstrapped {
  identity: Identity;
  token: string;
  /** Created by this start (not a restart). */
  created: boolean;
  /** A restart's --token replaces the public one the member held: written once the start's checks pass (adoptToken). */
  adoptToken?: true;
}

/**
 * The join protocol's client loads only when this start asks the cluster (a join, a failed join's removal):
 * a restarted member or a new cluster never runs it (issue 34).
 */
const askCluster: typeof import('../join/join-client.js').askCluster = async (...args) => (await import('../join/join-client.js')).askCluster(...args);

export function askOptions(o: MemberOptions, token: string): AskOptions {
  return {
    token,
    logger: o.logger,
    electionTimeoutMs: o.electionTimeoutMs,
    ...(o.peerTls !== undefined ? { peerTls: peerTlsOf(o)! } : {}),
    ...(o.clientTls !== undefined ? { clientTls: o.clientTls } : {}),
  };
}

/** The member in `<data-dir>/member`, bootstrapping it first (atomically) when there is none. */
export async function openOrBootstrap(o: MemberOptions): Promise<Bootstrapped> {
  const memberDir = join(o.dataDir, 'member');
  await mkdir(o.dataDir, { recursive: true, mode: 0o700 });
  const existing = await readIdentity(memberDir);
  if (existing !== undefined) {
    // Before anything opens the data: a refused start leaves every file as it was.
    const refusal = startRefusal(memberDir, await readDataVersion(memberDir), buildVersion());
    if (refusal !== undefined) throw new Error(refusal);
    return { identity: existing, ...(await restartToken(o, existing, memberDir)), created: false };
  }
  await refuseHalfWritten(memberWalDir(o.dataDir));
  if (o.walDir !== undefined) await refuseHalfWritten(o.walDir);
  const tmpDir = join(o.dataDir, 'member.bootstrap');
  await rm(tmpDir, { recursive: true, force: true }); // a bootstrap that crashed: start over
  await checkListeners(o, 'checked before joining; the cluster was not changed');
  const { token, generated } = await bootstrapToken(o);
  const decided = await decideIdentity(o, token);
  const identity: Identity = { ...decided.identity, urls: urlsOf(o), ...(o.walDir !== undefined ? { walDir: resolve(o.walDir) } : {}) };
  const { entries } = decided;
  await mkdir(tmpDir, { mode: 0o700 });
  if (entries.length > 0) {
    // Into the directory the rename moves, unless --wal-dir is outside it (wal-dir.ts).
    const { wal } = await Wal.open(walDirWhileBuilding(o.dataDir, o.walDir, tmpDir), { profile: o.storageProfile, logger: (line) => o.logger.info(line) });
    const hardState: HardState = { term: 1, vote: 0n, commit: entries[entries.length - 1]!.index };
    try {
      await wal.save({ hardState, entries });
    } finally {
      await wal.close();
    }
  }
  await writeIdentity(tmpDir, identity);
  await writeDataVersion(tmpDir, newDataVersion(buildVersion()));
  await rm(memberDir, { recursive: true, force: true }); // an empty member directory of an older version
  await rename(tmpDir, memberDir);
  await nodeFs.syncDir(o.dataDir);
  if (generated) {
    await writeFileDurably(o.dataDir, 'token', `${token}\n`);
    o.logger.info('generated a join token', { file: join(o.dataDir, 'token') });
  }
  return { identity, token, created: true };
}

/** Restart: the stored token wins; a different one on the command line is an error, never a new cluster. */
/** A member added for a start that cannot run must not stay in the cluster as an orphan learner. */
export async function leaveAfterFailedJoin(o: MemberOptions, identity: Identity, token: string, serverUrl: string): Promise<void> {
  try {
    await askCluster(askOptions(o, token), [serverUrl], 'memberRemove', { id: identity.memberId });
    await rm(join(o.dataDir, 'member'), { recursive: true, force: true });
    o.logger.warn('start failed after joining: removed this member from the cluster again; the next start joins afresh', { member: hex(identity.memberId) });
  } catch (error) {
    o.logger.error('start failed after joining, and removing this member again failed too: remove it with `etcdctl member remove`', {
      member: hex(identity.memberId),
      error: error instanceof Error ? error.message : String(error),
    });
  }
}

async function restartToken(o: MemberOptions, identity: Identity, memberDir: string): Promise<{ token: string; adoptToken?: true }> {
  const stored = identity.token ?? (await readTokenFile(o.dataDir)) ?? (o.bootstrap.kind === 'static' ? o.bootstrap.clusterToken : undefined);
  if (stored === undefined) {
    if (o.token !== undefined && o.token !== '') return { token: o.token };
    throw new Error(`${memberDir} holds a member but no join token: give the cluster's token with --token`);
  }
  if (o.token !== undefined && o.token !== '' && o.token !== stored) {
    // A cluster that never had a secret (restored with etcdctl's default --initial-cluster-token) takes one
    // at a restart: otherwise it could never accept a join (issue 32, item 5).
    if (!isSecretToken(stored) && isSecretToken(o.token)) return { token: o.token, adoptToken: true };
    throw new Error(
      `--token differs from the token this member joined its cluster with (stored in ${join(memberDir, 'identity')}): ` +
      'leave --token out to restart, or wipe the data directory to join another cluster',
    );
  }
  return { token: stored };
}

/**
 * Keeps a restart's --token in place of the public one (after the start's checks, so a refused start writes
 * nothing). The peers handshake with the token: every other member must be restarted with the same --token.
 */
export async function adoptToken(o: MemberOptions, identity: Identity, token: string): Promise<void> {
  await writeIdentity(join(o.dataDir, 'member'), { ...identity, token });
  await writeFileDurably(o.dataDir, 'token', `${token}\n`);
  o.logger.warn("adopted --token in place of etcd's public default: joins with --server and this token are accepted; " +
    'restart every other member of this cluster with the same --token (until then they cannot reach this one)', { file: join(o.dataDir, 'token') });
}

async function bootstrapToken(o: MemberOptions): Promise<{ token: string; generated: boolean }> {
  if (o.token !== undefined && o.token !== '') return { token: o.token, generated: false };
  const fromFile = await readTokenFile(o.dataDir);
  if (fromFile !== undefined) return { token: fromFile, generated: false };
  if (o.bootstrap.kind === 'join') throw new Error('--server needs --token (the token of the cluster to join)');
  if (o.bootstrap.kind === 'static') return { token: o.bootstrap.clusterToken, generated: false };
  return { token: `K10${randomBytes(24).toString('hex')}`, generated: true };
}

async function readTokenFile(dataDir: string): Promise<string | undefined> {
  try {
    const text = (await readFile(join(dataDir, 'token'), 'utf8')).trim();
    return text === '' ? undefined : text;
  } catch {
    return undefined;
  }
}

/** A member directory without identity but with log segments (an older version crashed mid-bootstrap). */
async function refuseHalfWritten(walDir: string): Promise<void> {
  const names = await readdir(walDir).catch(() => [] as string[]);
  if (names.some((n) => n.endsWith('.wal'))) {
    throw new Error(`${walDir}: the log has data but the data directory has no member identity; refusing to guess (wipe both and join again)`);
  }
}

/** A new member: who am I, which cluster, and (for a new cluster) the bootstrap entries of its log. */
async function decideIdentity(o: MemberOptions, token: string): Promise<{ identity: Identity; entries: Entry[] }> {
  const peerUrls = o.initialAdvertisePeerUrls;
  const b = o.bootstrap;
  const staticNew = b.kind === 'static' && b.state === 'new';
  if (o.witness === true && b.kind !== 'join' && !(staticNew && (b.witnesses ?? []).includes(o.name))) {
    throw new Error(
      'a witness joins a running cluster with --server (a data member\'s URL) and --token, or starts a new one with ' +
        '--initial-cluster and --initial-cluster-witnesses naming it (the same flags on every member)',
    );
  }
  if (o.witness !== true && staticNew && (b.witnesses ?? []).includes(o.name)) {
    throw new Error(`--initial-cluster-witnesses names this member (${o.name}): start it with \`etcetera witness\``);
  }
  switch (b.kind) {
    case 'init': {
      const memberId = idFrom(randomBytes(16).toString('hex'), ...peerUrls);
      const clusterId = idFrom(memberId.toString(16), randomBytes(16).toString('hex'));
      const self: Member = { id: memberId, name: o.name, peerUrls, clientUrls: o.advertiseClientUrls, isLearner: false };
      return { identity: { memberId, clusterId, name: o.name, token, joinPeers: [] }, entries: bootstrapEntries([self]) };
    }
    case 'static': {
      const { members, clusterId } = staticCluster(b.initialCluster, b.clusterToken);
      const self = members.find((m) => m.name === o.name);
      if (self === undefined) throw new Error(`--initial-cluster has no member named ${JSON.stringify(o.name)}`);
      const witnessIds = members.filter((m) => (b.witnesses ?? []).includes(m.name)).map((m) => m.id);
      if (b.state === 'new') {
        return { identity: { memberId: self.id, clusterId, name: o.name, token, joinPeers: [] }, entries: bootstrapEntries(members, witnessIds) };
      }
      // existing: the member was added with `member add`; find its id by its peer URLs.
      const others = b.initialCluster.filter((m) => m.name !== o.name).flatMap((m) => m.peerUrls);
      const { members: current, clusterId: existingCluster } = await askCluster(askOptions(o, token), others, 'members', {});
      const me = current.find((m) => m.peerUrls.some((u) => peerUrls.includes(u)));
      if (me === undefined) throw new Error('this member is not in the existing cluster; add it first with `member add`');
      return { identity: { memberId: me.id, clusterId: existingCluster, name: o.name, token, joinPeers: peersOf(current) }, entries: [] };
    }
    case 'join': {
      const witness = o.witness === true;
      const request = { name: o.name, peerUrls, clientUrls: witness ? [] : o.advertiseClientUrls, ...(witness ? { witness } : {}), build: buildVersion() };
      const r = await askCluster(askOptions(o, token), [b.serverUrl], 'join', request);
      o.logger.info(`joined the cluster as a ${witness ? 'witness' : 'learner'}`, { member: r.memberId.toString(16), through: b.serverUrl });
      return { identity: { memberId: r.memberId, clusterId: r.clusterId, name: o.name, token, joinPeers: peersOf(r.members) }, entries: [] };
    }
  }
}

function peersOf(members: Member[]): Array<{ id: bigint; peerUrls: string[] }> {
  return members.map((m) => ({ id: m.id, peerUrls: m.peerUrls }));
}

function idFrom(...parts: string[]): bigint {
  const id = createHash('sha1').update(parts.join('\n')).digest().readBigUInt64BE(0);
  return id === 0n ? 1n : id;
}
