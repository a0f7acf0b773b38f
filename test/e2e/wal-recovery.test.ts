/**
 * The log at start, with real processes (issue 12, items 9 and 10): a damaged last record that held
 * committed entries is refused with the log untouched and advice naming restore and rejoin; a disk too small
 * for a segment gives a clear error and no leftover temp file, and a small disk gets smaller segments.
 * The small disks are tmpfs mounts in a private mount namespace (`unshare -rm`: no root needed).
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Etcd3 } from 'etcd3';
import { cliPath, freePort, killAll, sleep, startServer, tempDir, waitFor } from './harness.js';

afterAll(() => killAll());

function segmentOf(dataDir: string): string {
  const dir = join(dataDir, 'member/wal');
  const name = readdirSync(dir).filter((n) => n.endsWith('.wal')).sort().pop()!;
  return join(dir, name);
}

const sha = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex');

describe('a damaged last record', () => {
  it('torn-looking (a zeroed sector) but holding an entry the backend already applied: start refuses, names restore and rejoin, and leaves the log as it was', async () => {
    const sp = await startServer({ name: 'dmg' });
    await clusterVersionSet(sp.clientUrl);
    const c = new Etcd3({ hosts: sp.clientUrl, dialTimeout: 2000 });
    try {
      for (let i = 0; i < 5; i++) await c.put(`k${i}`).value('v');
      await c.put('last').value('x'.repeat(4000)); // a large last entry record, easy to hit
    } finally {
      c.close();
    }
    await sleep(1000); // the backend (written behind) applies it
    await sp.kill('SIGKILL');
    const segment = segmentOf(sp.dataDir);
    const bytes = readFileSync(segment);
    // A sector of the last entries record zeroed: the mark of a torn write, but the backend applied the entry.
    const record = recordOffsets(bytes).filter((r) => bytes[r.at + 4] === 1).pop()!;
    const sector = Math.ceil((record.at + 16) / 512) * 512;
    expect(sector + 512).toBeLessThan(record.at + 16 + record.length);
    bytes.fill(0, sector, sector + 512);
    writeFileSync(segment, bytes);
    const before = sha(segment);
    const again = await startServer({ name: 'dmg', dataDir: sp.dataDir, clientPort: sp.clientPort, peerPort: sp.peerPort, waitReady: false });
    expect(await Promise.race([again.exited, sleep(20_000).then(() => 'still running')])).toBe(1);
    const out = again.output.join('\n');
    expect(out).toMatch(/committed entries are missing \(the readable log ends at index \d+, the backend already applied index \d+\)/);
    expect(out).toMatch(/restore its data directory from a backup \(`etcetera snapshot restore FILE --data-dir NEW-DIR`.*or remove it from the cluster/);
    expect(out).not.toMatch(/torn tail/);
    expect(sha(segment)).toBe(before);
  }, 60_000);
});

/**
 * Waits for the leader's one cluster-version entry (node/periodic/cluster-version.ts), so that the test's own
 * put is the last entries record in the log.
 */
async function clusterVersionSet(clientUrl: string): Promise<void> {
  await waitFor('the cluster version', async () => ((await (await fetch(`${clientUrl}/status`)).json()) as { clusterVersion: string | null }).clusterVersion ?? undefined, 20_000);
}

/** Offsets of the records in a segment (64-byte header, then `u32 length` + 12 header bytes + padded payload). */
function recordOffsets(bytes: Buffer): { at: number; length: number }[] {
  const out: { at: number; length: number }[] = [];
  for (let at = 64; at + 16 <= bytes.length && bytes.readUInt32LE(at) !== 0; at += 16 + ((bytes.readUInt32LE(at) + 7) & ~7)) {
    out.push({ at, length: bytes.readUInt32LE(at) });
  }
  return out;
}

/** A member with a few keys and a 4 KB last value, killed with SIGKILL; returns it and its last segment. */
async function killedMember(name: string): Promise<{ sp: Awaited<ReturnType<typeof startServer>>; segment: string }> {
  const sp = await startServer({ name });
  await clusterVersionSet(sp.clientUrl);
  const c = new Etcd3({ hosts: sp.clientUrl, dialTimeout: 2000 });
  try {
    for (let i = 0; i < 5; i++) await c.put(`k${i}`).value('v');
    await c.put('last').value('x'.repeat(4000));
  } finally {
    c.close();
  }
  await sleep(500);
  await sp.kill('SIGKILL');
  return { sp, segment: segmentOf(sp.dataDir) };
}

describe('a complete last record with a CRC mismatch versus one cut short (issue 25, item 2)', () => {
  // The last batch holds the last put's entries record, then a hard state record: both were written whole.
  const targets = [
    { what: 'the last record (a hard state)', pick: (recs: { at: number; length: number; type: number }[]) => recs[recs.length - 1]! },
    { what: "the last put's entries record (acknowledged)", pick: (recs: { at: number; length: number; type: number }[]) => recs.filter((r) => r.type === 1).pop()! },
  ];
  it.each(targets)('four bytes flipped inside $what: start refuses with the corruption error and touches nothing', async ({ pick }) => {
    const { sp, segment } = await killedMember('flip');
    const bytes = readFileSync(segment);
    const target = pick(recordOffsets(bytes).map((r) => ({ ...r, type: bytes[r.at + 4]! })));
    for (let i = 0; i < 4; i++) bytes[target.at + 16 + ((i * 5) % target.length)]! ^= 0xa5; // inside the payload
    writeFileSync(segment, bytes);
    const before = sha(segment);
    const again = await startServer({ name: 'flip', dataDir: sp.dataDir, clientPort: sp.clientPort, peerPort: sp.peerPort, waitReady: false });
    expect(await Promise.race([again.exited, sleep(20_000).then(() => 'still running')])).toBe(1);
    const out = again.output.join('\n');
    expect(out).toContain(`wal: corrupt data in ${segment} at offset ${target.at}: CRC mismatch in a complete record (walpb: crc mismatch)`);
    expect(out).not.toMatch(/torn tail/);
    expect(sha(segment)).toBe(before);
  }, 60_000);

  it('the last record cut short (the file ends inside it): starts without it, saying it was a torn write', async () => {
    const { sp, segment } = await killedMember('cut');
    const bytes = readFileSync(segment);
    const last = recordOffsets(bytes).pop()!;
    writeFileSync(segment, bytes.subarray(0, last.at + 16 + Math.floor(last.length / 2)));
    const again = await startServer({ name: 'cut', dataDir: sp.dataDir, clientPort: sp.clientPort, peerPort: sp.peerPort });
    const out = again.output.join('\n');
    expect(out).toMatch(new RegExp(`torn tail at offset ${last.at} \\(record length ${last.length} runs past the end of the file; torn write: the file ends inside the record\\)`));
    const c = new Etcd3({ hosts: again.clientUrl, dialTimeout: 2000 });
    try {
      await waitFor('a leader', async () => (await c.maintenance.status()).leader !== '0' || undefined);
      expect(await c.get('k4').string()).toBe('v');
      await c.put('after').value('y');
      expect(await c.get('after').string()).toBe('y');
    } finally {
      c.close();
    }
    await again.kill('SIGTERM');
  }, 60_000);
});

const canMount = spawnSync('unshare', ['-rm', 'true']).status === 0;
if (!canMount && !process.env.CI) console.warn('SKIPPED: unshare -rm (user + mount namespaces) is not available, so the small-disk tests cannot run');

/** Runs the CLI with its data directory on a tmpfs of `sizeKiB`; resolves with its exit code, output and the WAL listing. */
async function onSmallDisk(sizeKiB: number, untilMs: number, clientPort: number): Promise<{ code: number | string; output: string }> {
  const mnt = tempDir('small-disk');
  mkdirSync(mnt, { recursive: true });
  const peerPort = await freePort();
  const server = [process.execPath, cliPath, 'server', '--name', 'small', '--data-dir', `${mnt}/d`, '--storage-profile', 'ssd',
    '--listen-client-urls', `http://127.0.0.1:${clientPort}`, '--listen-peer-urls', `http://127.0.0.1:${peerPort}`,
    '--initial-advertise-peer-urls', `http://127.0.0.1:${peerPort}`].map((a) => `'${a}'`).join(' ');
  const script = `mount -t tmpfs -o size=${sizeKiB}k none '${mnt}' && { timeout -s TERM ${Math.ceil(untilMs / 1000)} ${server}; echo "exit=$?"; ls -a '${mnt}/d/member/wal' '${mnt}/d/member.bootstrap/wal' 2>&1; true; }`;
  const p = spawn('unshare', ['-rm', 'sh', '-c', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  p.stdout.on('data', (d: Buffer) => (output += d.toString()));
  p.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const code = await new Promise<number | string>((r) => p.once('exit', (c, s) => r(c ?? s ?? 'unknown')));
  return { code, output };
}

describe.skipIf(!canMount && !process.env.CI)('a small disk', () => {
  it('too small even for the first segment: one clear error, exit 1, no .wal.tmp left', async () => {
    expect(canMount, 'unshare -rm must work under CI').toBe(true);
    const r = await onSmallDisk(768, 20_000, await freePort());
    expect(r.code).toBe(0);
    expect(r.output).toContain('exit=1');
    expect(r.output).toMatch(/no space in .* for the write-ahead log: even the smallest segment \(1 MiB\) does not fit; free some space or give --data-dir a larger disk/);
    expect(r.output).not.toMatch(/\.wal\.tmp/);
    expect(r.output).not.toMatch(/WalFatalError|at .*\.js:\d+/);
  }, 60_000);

  it('room for less than a 64 MiB segment: serves, and the next segment is cut to fit', async () => {
    const clientPort = await freePort();
    const run = onSmallDisk(24 * 1024, 25_000, clientPort);
    const c = new Etcd3({ hosts: `http://127.0.0.1:${clientPort}`, dialTimeout: 1000 });
    try {
      await waitFor('serving on the small disk', async () => (await c.maintenance.status()).leader !== '0' || undefined, 20_000);
      // 1 MiB of log fills the small first segment: the next one is prepared at half-full.
      for (let i = 0; i < 12; i++) await c.put(`big${i}`).value('y'.repeat(100_000));
      expect(await c.get('big11').string()).toHaveLength(100_000);
    } finally {
      c.close();
    }
    const r = await run;
    expect(r.output).toMatch(/free; preparing a \d+(\.\d+)? MiB segment instead of 64 MiB/);
    expect(r.output).toContain('exit=124'); // stopped by timeout, not by a failure
  }, 60_000);
});
