/** Options of a simulated cluster (see cluster.ts). */
import type { RaftConfig } from '../../src/raft/types.js';
import type { CheckOptions } from './checker.js';
import type { DiskProfile } from './disk.js';
import type { LinkProfile } from './network.js';
import type { NodeTuning } from './sim-node.js';

export type RaftTuning = Omit<RaftConfig, 'id' | 'rng' | 'logger'>;

export const defaultRaftTuning: RaftTuning = {
  electionTicks: 10,
  heartbeatTicks: 1,
  preVote: true,
  checkQuorum: true,
  maxMsgBytes: 64 * 1024,
  maxInflightMsgs: 64,
  maxUncommittedBytes: 1024 * 1024,
};

export interface ClusterOptions {
  seed: number;
  /** Initial voters, ids 1..voters. */
  voters: number;
  /** How many of the initial voters are witnesses: the last ones (ids voters-witnesses+1..voters). */
  witnesses?: number;
  raft?: Partial<RaftTuning>;
  link?: LinkProfile;
  disk?: DiskProfile;
  node?: Partial<NodeTuning>;
  checks?: Partial<CheckOptions>;
  stepsPerTick?: number;
  /** Ticks a thawed node catches up at most (its clock jumped). */
  thawTicksMax?: number;
  trace?: (line: string) => void;
  /** Also trace every message delivered (very verbose). */
  traceMessages?: boolean;
}
