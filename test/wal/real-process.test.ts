/**
 * Real processes on the real file system:
 * - SIGKILL at seeded random moments while a child appends; every acknowledged record is there after reopen.
 * - fdatasync failing with EIO (strace fault injection): the child exits non-zero and never acknowledges
 *   the failed write (W7).
 * - The directory lock (W16): a second open, in this process or another, is refused; a killed holder's
 *   stale lock does not block a restart.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Prng } from '../../src/base/prng.js';
import { WalLockedError } from '../../src/wal/errors.js';
import { Wal } from '../../src/wal/wal.js';
import { entryData } from './child-appender.js';

const childScript = join(import.meta.dirname, 'child-appender.ts');
// `node --import tsx`, not the tsx CLI: the CLI runs the script in a grandchild, which SIGKILL would miss.
const node = [process.execPath, '--import', 'tsx'];
const children = new Set<ChildProcess>();
const dirs: string[] = [];

afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'etcetera-wal-'));
  dirs.push(d);
  return d;
}

interface Run {
  child: ChildProcess;
  acks: number[];
  stdout: string[];
  stderr: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  firstAck: Promise<void>;
}

function start(command: string, args: string[]): Run {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  const run = { child, acks: [] as number[], stdout: [] as string[], stderr: '' } as Run;
  let buffered = '';
  let onFirst: () => void = () => {};
  run.firstAck = new Promise((resolve) => (onFirst = resolve));
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop()!;
    for (const line of lines) {
      run.stdout.push(line);
      if (line.startsWith('ack ')) {
        run.acks.push(Number(line.slice(4)));
        onFirst();
      }
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => (run.stderr += chunk.toString()));
  run.exited = new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      children.delete(child);
      onFirst();
      resolve({ code, signal });
    });
    child.on('error', (err) => {
      run.stderr += `spawn failed: ${err.message}`;
      children.delete(child);
      onFirst();
      resolve({ code: -1, signal: null });
    });
  });
  return run;
}

async function checkAcked(dir: string, acked: Iterable<number>, context: string): Promise<number> {
  const { wal, state } = await Wal.open(dir, { profile: 'ssd' });
  const byIndex = new Map(state.entries.map((e) => [e.index, e]));
  for (const i of acked) {
    const e = byIndex.get(i);
    expect(e, `${context}: acknowledged entry ${i} lost`).toBeDefined();
    expect(Buffer.from(e!.data).equals(Buffer.from(entryData(i))), `${context}: entry ${i} differs`).toBe(true);
  }
  await wal.close();
  return state.entries.length;
}

describe('real processes', () => {
  it('SIGKILL at random moments never loses an acknowledged record', async () => {
    const seed = Number(process.env.WAL_KILL_SEED ?? 20261129);
    const rng = new Prng(seed);
    const dir = tempDir();
    const acked = new Set<number>();
    for (let iteration = 0; iteration < 5; iteration++) {
      const run = start(node[0]!, [...node.slice(1), childScript, 'append', dir, String(1 + rng.int(16))]);
      await run.firstAck;
      await new Promise((r) => setTimeout(r, 20 + rng.int(300)));
      run.child.kill('SIGKILL');
      const { signal } = await run.exited;
      expect(signal, `seed ${seed} iteration ${iteration}: child died on its own: ${run.stderr}`).toBe('SIGKILL');
      expect(run.acks.length, `seed ${seed}: no acks`).toBeGreaterThan(0);
      for (const a of run.acks) acked.add(a);
      await checkAcked(dir, acked, `seed ${seed} iteration ${iteration}`);
    }
    expect(acked.size).toBeGreaterThan(50);
  }, 60_000);
});

const strace = spawnSync('strace', ['-V']).status === 0;
const straceMissing = !strace && !process.env.CI;
if (straceMissing) console.warn('SKIPPED: strace is not installed, so the fdatasync EIO test cannot run (install strace)');

describe.skipIf(straceMissing)('fdatasync EIO (strace fault injection)', () => {
  const traced = (inject: string, dir: string): Run =>
    start('strace', ['-f', '--seccomp-bpf', '-o', '/dev/null', '-e', 'trace=fdatasync', '-e', inject, ...node, childScript, 'append', dir, '4']);

  it('every fdatasync fails: exits non-zero and acknowledges nothing', async () => {
    expect(strace, 'strace is required for this test under CI (apt-get install strace)').toBe(true);
    const dir = tempDir();
    const run = traced('inject=fdatasync:error=EIO', dir);
    const { code } = await run.exited;
    expect(code, run.stderr).not.toBe(0);
    expect(run.acks).toEqual([]);
    expect(run.stderr).toMatch(/fdatasync failed \(EIO/);
  }, 30_000);

  it('fdatasync fails after a while: exits non-zero; everything acknowledged before is durable', async () => {
    const dir = tempDir();
    const run = traced('inject=fdatasync:error=EIO:when=30+', dir);
    const { code } = await run.exited;
    expect(code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(/fdatasync failed \(EIO/);
    expect(run.acks.length).toBeGreaterThan(0);
    await checkAcked(dir, run.acks, 'after EIO');
  }, 30_000);
});

describe('data directory lock (W16)', () => {
  it('a second open in the same process is refused, naming the directory; close releases it', async () => {
    const dir = tempDir();
    const { wal } = await Wal.open(dir, { profile: 'ssd', tuning: { segmentBytes: 1 << 16 } });
    const err: unknown = await Wal.open(dir, { profile: 'ssd' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WalLockedError);
    expect((err as Error).message).toContain(dir);
    expect((err as Error).message).toContain('this process');
    await wal.close();
    const again = await Wal.open(dir, { profile: 'ssd', tuning: { segmentBytes: 1 << 16 } });
    await again.wal.close();
  });

  it('another live process holding the directory blocks us; once it is killed, we start', async () => {
    const dir = tempDir();
    const holder = start(node[0]!, [...node.slice(1), childScript, 'hold', dir]);
    for (let waited = 0; !holder.stdout.includes('ready'); waited += 20) {
      expect(holder.child.exitCode, holder.stderr).toBeNull();
      expect(waited, 'holder did not start').toBeLessThan(20_000);
      await new Promise((r) => setTimeout(r, 20));
    }
    const err: unknown = await Wal.open(dir, { profile: 'ssd' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WalLockedError);
    expect((err as Error).message).toContain(`pid ${holder.child.pid}`);
    holder.child.kill('SIGKILL');
    await holder.exited;
    const { wal } = await Wal.open(dir, { profile: 'ssd', tuning: { segmentBytes: 1 << 16 } });
    await wal.close();
  }, 30_000);
});
