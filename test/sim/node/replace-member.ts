/**
 * The operator's answer to a member that refuses to start on a damaged WAL (wal-damage.ts): it is lost, so
 * remove it from the membership and add a fresh member in its place through the normal path (etcdctl member
 * remove; member add --learner; start it empty; member promote once it is in sync), as C11 in test/GLOSSARY.md and
 * etcd's disaster-recovery guide do. Every call goes through whichever member leads at the moment, with a
 * client's deadline, and is retried through the chaos until it succeeds; an answer lost on the way is
 * recovered by reading the member list.
 */
import type { Member, RequestContext } from '../../../src/node/server-api.js';
import type { ServerCluster } from './server-cluster.js';
import type { ServerNode } from './server-node.js';

const callMs = 5000;
const retryMs = 200;

function ctx(): RequestContext {
  return { requireLeader: false, signal: new AbortController().signal };
}

/** A call through the current leader with a deadline: its value, or undefined (no leader, an error, no answer). */
async function viaLeader<T>(c: ServerCluster, call: (n: ServerNode) => Promise<T>): Promise<T | undefined> {
  const leader = c.leader();
  if (leader === undefined) return undefined;
  const timeout = c.loop.sleep(callMs).then(() => undefined);
  return Promise.race([call(leader).catch((e: unknown) => void c.trace(`operator: ${String(e)}`)), timeout]);
}

async function members(c: ServerCluster): Promise<Member[] | undefined> {
  return viaLeader(c, (n) => n.server!.memberList(true, ctx()));
}

/** Replace `lost` by a new member whose peer URL names `index`; resolves once it is a promoted voter. */
export async function replaceMember(c: ServerCluster, lost: ServerNode, index: number): Promise<ServerNode> {
  const loop = c.loop;
  c.trace(`operator: member remove ${lost.id.toString(16)}`);
  for (;;) {
    const removed = await viaLeader(c, (n) => n.server!.memberRemove(lost.id, ctx()));
    if (removed !== undefined) break;
    const list = await members(c);
    if (list !== undefined && !list.some((m) => m.id === lost.id)) break;
    await loop.sleep(retryMs);
  }
  const peerUrl = `http://n${index}.sim:2380`;
  c.trace(`operator: member add --learner ${peerUrl}`);
  let added: Member | undefined;
  while (added === undefined) {
    added = (await viaLeader(c, (n) => n.server!.memberAdd({ peerUrls: [peerUrl], isLearner: true }, ctx())))?.member;
    added ??= (await members(c))?.find((m) => m.peerUrls.includes(peerUrl));
    if (added === undefined) await loop.sleep(retryMs);
  }
  const n = c.addNode({ id: added.id, name: `n${index}`, peerUrls: [peerUrl], clientUrls: [`http://n${index}.sim:2379`], isLearner: true });
  n.prepareJoin();
  c.trace(`operator: starting n${index} (${added.id.toString(16)}) empty`);
  c.start(n);
  for (;;) {
    const promoted = await viaLeader(c, (l) => l.server!.memberPromote(added.id, ctx()));
    if (promoted !== undefined) break;
    const m = (await members(c))?.find((x) => x.id === added.id);
    if (m !== undefined && !m.isLearner) break;
    await loop.sleep(retryMs);
  }
  c.trace(`operator: n${index} promoted`);
  return n;
}
