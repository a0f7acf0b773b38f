/**
 * The simulated network. It decides, for each message sent, whether and when copies of it arrive; the cluster
 * schedules those deliveries on its event queue and drops them if the receiver is down on arrival.
 *
 * Faults: a drop rate (0–30% in chaos), a base delay plus jitter (so messages reorder), duplication, and
 * directed cuts: cut(a, b) blocks a → b only (an asymmetric, one-way partition); partition() and isolate() are
 * built from directed cuts. A cut applies at send time: messages already in flight still arrive, as they do
 * on a real network when a partition begins.
 */
import type { Prng } from '../../src/base/prng.js';
import type { NodeId } from '../../src/raft/types.js';

export interface LinkProfile {
  /** Probability in [0, 1) that a message is lost. */
  dropRate: number;
  /** Probability in [0, 1) that a message is delivered twice. */
  dupRate: number;
  /** Minimum delay, in simulation steps. */
  delaySteps: number;
  /** Extra uniformly random delay in [0, jitterSteps]; a jitter larger than the gaps between sends reorders. */
  jitterSteps: number;
}

export const perfectLink: LinkProfile = { dropRate: 0, dupRate: 0, delaySteps: 1, jitterSteps: 0 };

export class SimNetwork {
  #rng: Prng;
  #defaultProfile: LinkProfile;
  #links = new Map<string, LinkProfile>();
  #cuts = new Set<string>();
  sent = 0;
  dropped = 0;

  constructor(rng: Prng, profile: LinkProfile = perfectLink) {
    this.#rng = rng;
    this.#defaultProfile = { ...profile };
  }

  /** Delivery delays (in steps) for one message from `from` to `to`: none if lost, two if duplicated. */
  delaysFor(from: NodeId, to: NodeId): number[] {
    this.sent++;
    if (this.#cuts.has(key(from, to))) {
      this.dropped++;
      return [];
    }
    const p = this.profile(from, to);
    if (p.dropRate > 0 && this.#rng.next() < p.dropRate) {
      this.dropped++;
      return [];
    }
    const delays = [this.#delay(p)];
    if (p.dupRate > 0 && this.#rng.next() < p.dupRate) delays.push(this.#delay(p));
    return delays;
  }

  #delay(p: LinkProfile): number {
    return p.delaySteps + (p.jitterSteps > 0 ? this.#rng.int(p.jitterSteps + 1) : 0);
  }

  profile(from: NodeId, to: NodeId): LinkProfile {
    return this.#links.get(key(from, to)) ?? this.#defaultProfile;
  }

  setDefaultProfile(p: LinkProfile): void {
    this.#defaultProfile = { ...p };
  }

  /** Override one directed link's profile. */
  setLink(from: NodeId, to: NodeId, p: LinkProfile): void {
    this.#links.set(key(from, to), { ...p });
  }

  /** Block messages from → to (one way). */
  cut(from: NodeId, to: NodeId): void {
    if (from !== to) this.#cuts.add(key(from, to));
  }

  /** Block both directions between a and b. */
  cutBoth(a: NodeId, b: NodeId): void {
    this.cut(a, b);
    this.cut(b, a);
  }

  isCut(from: NodeId, to: NodeId): boolean {
    return this.#cuts.has(key(from, to));
  }

  /** Split `all` into the given groups: links between different groups are cut both ways. */
  partition(groups: NodeId[][], all: NodeId[]): void {
    const groupOf = new Map<NodeId, number>();
    groups.forEach((g, i) => g.forEach((id) => groupOf.set(id, i)));
    for (const a of all) for (const b of all) if (groupOf.get(a) !== groupOf.get(b)) this.cut(a, b);
  }

  /** Cut `id` off from every node in `all`, both ways. */
  isolate(id: NodeId, all: NodeId[]): void {
    for (const other of all) this.cutBoth(id, other);
  }

  /** Remove every cut touching `id`. */
  rejoin(id: NodeId): void {
    for (const k of [...this.#cuts]) {
      const [a, b] = k.split('>');
      if (a === String(id) || b === String(id)) this.#cuts.delete(k);
    }
  }

  /** Remove every cut and every per-link override; set a clean default profile. */
  healAll(profile: LinkProfile = perfectLink): void {
    this.#cuts.clear();
    this.#links.clear();
    this.#defaultProfile = { ...profile };
  }

  cutCount(): number {
    return this.#cuts.size;
  }
}

function key(from: NodeId, to: NodeId): string {
  return `${from}>${to}`;
}
