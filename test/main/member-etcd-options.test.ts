/** The small adapters behind etcd's options: --unsafe-no-fsync's file system, --log-outputs' sinks. */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openLogOutputs } from '../../src/config/log-outputs.js';
import { noFsyncPort } from '../../src/main/member-etcd-options.js';
import { NodeFsPort } from '../../src/wal/fs-port.js';

const dir = mkdtempSync(join(tmpdir(), 'etcetera-etcd-options-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('--unsafe-no-fsync', () => {
  it('writes and reads through the real file system but never syncs a file or a directory', async () => {
    const inner = new NodeFsPort();
    const syncs: string[] = [];
    const counting = Object.assign(Object.create(inner) as NodeFsPort, {
      syncDir: async (d: string) => void syncs.push(`dir ${d}`),
      open: async (path: string, mode: 'create' | 'existing') => {
        const f = await inner.open(path, mode);
        return Object.assign(Object.create(f), {
          path: f.path,
          write: f.write.bind(f), read: f.read.bind(f), truncate: f.truncate.bind(f), size: f.size.bind(f), close: f.close.bind(f),
          datasync: async () => void syncs.push('datasync'), sync: async () => void syncs.push('sync'),
        });
      },
    });
    const fs = noFsyncPort(counting);
    const file = await fs.open(join(dir, 'seg'), 'create');
    await file.write(new Uint8Array([1, 2, 3]), 3, 0);
    await file.datasync();
    await file.sync();
    await fs.syncDir(dir);
    expect(await file.size()).toBe(3);
    await file.close();
    expect([...((await fs.readFile(join(dir, 'seg'))) ?? [])]).toEqual([1, 2, 3]);
    expect(syncs).toEqual([]);
  });
});

describe('--log-outputs', () => {
  it('appends lines to each file output, created 0600, and writes the fatal path synchronously', () => {
    const path = join(dir, 'etcd.log');
    const a = openLogOutputs([path]);
    a.sink('{"msg":"one"}\n');
    a.close();
    const b = openLogOutputs(['stdout', path]);
    b.sinkSync('{"msg":"two"}\n');
    b.close();
    expect(readFileSync(path, 'utf8')).toBe('{"msg":"one"}\n{"msg":"two"}\n');
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });
});
