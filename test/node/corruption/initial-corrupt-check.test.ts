/** --experimental-initial-corrupt-check: refuse to start on a hash mismatch at an equal compact revision. */
import { describe, expect, it } from 'vitest';
import type { Member } from '../../../src/node/server-api.js';
import type { HashAt } from '../../../src/node/corruption/corruption-check.js';
import { EtcdError } from '../../../src/node/errors.js';
import { InitialCorruptionError, initialCorruptCheck } from '../../../src/node/corruption/initial-corrupt-check.js';
import { createLogger } from '../../../src/config/log.js';

const member = (id: bigint): Member => ({ id, name: `m${id}`, peerUrls: [`http://127.0.0.1:${2380 + Number(id)}`], clientUrls: [], isLearner: false });
const members = [member(1n), member(2n), member(3n)];
const mine: HashAt = { hash: 111, compactRevision: 5, revision: 20 };

function run(peers: Record<string, HashAt | Error>): Promise<{ lines: string[]; asked: number[] }> {
  const lines: string[] = [];
  const asked: number[] = [];
  const logger = createLogger({ level: 'debug', sink: (l) => lines.push(l) });
  return initialCorruptCheck({
    memberId: 1n,
    members,
    localHash: async () => mine,
    peerHash: async (url, revision) => {
      asked.push(revision);
      const answer = peers[url];
      if (answer === undefined) throw new Error(`unexpected ${url}`);
      if (answer instanceof Error) throw answer;
      return answer;
    },
    logger,
  }).then(() => ({ lines, asked }));
}

describe('initial corruption check', () => {
  it('passes when every peer has the same hash at our revision', async () => {
    const r = await run({ 'http://127.0.0.1:2382': mine, 'http://127.0.0.1:2383': mine });
    expect(r.asked).toEqual([20, 20]);
    expect(r.lines.at(-1)).toMatch(/initial corruption checking passed; no corruption/);
  });

  it('refuses to start when a peer at the same compact revision has another hash', async () => {
    await expect(run({ 'http://127.0.0.1:2382': mine, 'http://127.0.0.1:2383': { ...mine, hash: 222 } })).rejects.toThrow(
      new InitialCorruptionError('1 found data inconsistency with peers'),
    );
  });

  it('skips peers compacted differently, behind, ahead or unreachable, as etcd does', async () => {
    const r = await run({ 'http://127.0.0.1:2382': { ...mine, hash: 9, compactRevision: 7 }, 'http://127.0.0.1:2383': new EtcdError('futureRev') });
    expect(r.lines.join('\n')).toMatch(/found different compact revision values from remote peer[\s\S]*cannot fetch hash from slow remote peer/);
    const s = await run({ 'http://127.0.0.1:2382': new EtcdError('compacted'), 'http://127.0.0.1:2383': new Error('connect ECONNREFUSED') });
    expect(s.lines.join('\n')).toMatch(/local member is behind[\s\S]*cannot fetch hash from remote peer.*ECONNREFUSED/);
  });
});
