/**
 * CPU of one peer round-trip probe (PeerTransport.probe, src/peer/peer-prober.ts), both ends in this process:
 * `npx tsx bench/peer-probe-cost.ts`. Measured 2026-12-03 on the CI-class VM: 1,736 µs user + 469 µs system
 * when every probe dialled and authenticated a connection, 105 + 26 µs over the kept one.
 */
import { startNode } from '../test/peer/helpers.js';

const probes = 300;
const a = await startNode(1n);
const b = await startNode(2n);
a.transport.addPeer(2n, [b.url]);
for (let i = 0; i < 20; i++) await a.transport.probe(b.url, 2n, 5000); // warm-up
const c0 = process.cpuUsage();
for (let i = 0; i < probes; i++) await a.transport.probe(b.url, 2n, 5000);
const c = process.cpuUsage(c0);
console.log(`per probe (both ends): user ${(c.user / probes).toFixed(0)} µs, system ${(c.system / probes).toFixed(0)} µs`);
await a.transport.close();
await b.transport.close();
