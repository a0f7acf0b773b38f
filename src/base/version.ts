/**
 * Versions of a member and of its cluster (etcd's version package and membership.RaftCluster's version),
 * the one place that says which build writes which data format and which builds may run beside which.
 *
 * - A build version is the package's semver (`0.2.0`); git describe may add `+<describe>` build metadata,
 *   which no comparison looks at.
 * - The cluster version is the major.minor of the oldest build among the members (etcd:
 *   decideClusterVersion). The leader decides it and commits it through Raft; features that change what is
 *   written are gated by it, so a member of an older build never meets data it cannot read.
 * - A data format is an integer recorded in the data directory (`member/version`). A data directory of an
 *   older build has no record: it is format 1.
 *
 * Worked example, a rolling upgrade of three members from 0.1.0 (format 1) to 0.2.0 (format 2): while any
 * member still runs 0.1.0 the cluster version stays 0.1 and every data directory stays at format 1; once
 * the last one restarts on 0.2.0, the leader commits cluster version 0.2 and each member raises its record
 * to format 2. A downgrade back is a rolling restart on 0.1.0: that build reads format 2 (it adds only
 * records 0.1.0 ignores), and the leader lowers the cluster version again as soon as it meets the older build.
 */

/**
 * The etcd version Status reports. kube-apiserver uses watch progress requests only from 3.5.13 on (and
 * 3.4.31+), so we claim a 3.5 release past that.
 */
export const etcdVersion = '3.5.17';

/** The data format this build writes. */
export const dataFormatVersion = 2;
/** The oldest data format this build can read. */
export const dataFormatOldest = 1;
/** The oldest cluster version this build may join or run in (etcd's MinClusterVersion). */
export const clusterVersionOldest = '0.1';
/** What a member announces when it announces nothing: a build from before versions were announced. */
export const unannouncedBuild = '0.1.0';

/** Which data format a cluster version writes (each format from the cluster version that introduced it). */
const formatSince: ReadonlyArray<{ clusterVersion: string; dataFormat: number }> = [
  { clusterVersion: '0.1', dataFormat: 1 },
  { clusterVersion: '0.2', dataFormat: 2 },
];

/** A member's versions as announced to its peers (in the peer handshake). */
export interface MemberVersion {
  build: string;
  dataFormat: number;
}

/** [major, minor, patch] of a semver string, ignoring pre-release and build metadata; undefined if malformed. */
export function parseVersion(text: string): [number, number, number] | undefined {
  const m = /^v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+].*)?$/.exec(text);
  if (m === null) return undefined;
  return [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)];
}

/** Compare two versions by major.minor only (etcd's compareMajorMinorVersion): -1, 0 or 1. */
export function compareMajorMinor(a: string, b: string): number {
  const pa = parseVersion(a);
  const pb = parseVersion(b);
  if (pa === undefined || pb === undefined) throw new Error(`not a version: ${pa === undefined ? a : b}`);
  const d = pa[0] - pb[0] || pa[1] - pb[1];
  return Math.sign(d);
}

/** The cluster version a build runs at: its major.minor. */
export function clusterVersionOf(build: string): string {
  const p = parseVersion(build);
  if (p === undefined) throw new Error(`not a version: ${build}`);
  return `${p[0]}.${p[1]}`;
}

/** The data format written at a cluster version (the newest format introduced at or below it). */
export function dataFormatOf(clusterVersion: string): number {
  let format = formatSince[0]!.dataFormat;
  for (const f of formatSince) if (compareMajorMinor(f.clusterVersion, clusterVersion) <= 0) format = f.dataFormat;
  return format;
}

/**
 * The leader's decision (etcd's decideClusterVersion): the lowest build among the members, or undefined while
 * the build of any member is unknown (not yet met since this member started), so no member is ever judged
 * by a version it did not announce.
 */
export function decideClusterVersion(builds: ReadonlyArray<string | undefined>): string | undefined {
  let lowest: string | undefined;
  for (const b of builds) {
    if (b === undefined) return undefined;
    const v = clusterVersionOf(b);
    if (lowest === undefined || compareMajorMinor(v, lowest) < 0) lowest = v;
  }
  return lowest;
}

/** Why this build cannot run in a cluster at `clusterVersion`, or undefined if it can. */
export function clusterVersionMismatch(build: string, clusterVersion: string): 'build too old' | 'build too new' | undefined {
  if (compareMajorMinor(build, clusterVersion) < 0) return 'build too old';
  if (compareMajorMinor(clusterVersion, clusterVersionOldest) < 0) return 'build too new';
  return undefined;
}

/** Why this build cannot read data of `dataFormat`, or undefined if it can. */
export function dataFormatMismatch(dataFormat: number): 'data too new' | 'data too old' | undefined {
  if (dataFormat > dataFormatVersion) return 'data too new';
  if (dataFormat < dataFormatOldest) return 'data too old';
  return undefined;
}
