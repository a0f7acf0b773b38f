/**
 * A throwaway real etcd (Debian's 3.4 from .ci/run) on free 127.0.0.1 ports, for differential tests. Without
 * /usr/bin/etcd the tests skip with a message locally and fail under CI.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { freePort, removeDir, sleep, tempDir } from './harness.js';

export const etcdPath = '/usr/bin/etcd';

export function haveEtcd(): boolean {
  if (existsSync(etcdPath)) return true;
  if (process.env.CI) throw new Error(`${etcdPath} is missing under CI (.ci/run installs etcd-server)`);
  console.warn(`${etcdPath} not installed: skipping the differential tests against etcd`);
  return false;
}

export interface RealEtcd {
  clientUrl: string;
  stop(): Promise<void>;
}

export interface RealEtcdOptions {
  /**
   * Data directory on tmpfs (/dev/shm, where there is one): etcd 3.4 has no --unsafe-no-fsync, and a test that
   * sends thousands of writes to compare answers, not durability, should not wait on the disk's fsyncs.
   */
  tmpfs?: boolean;
}

/** Ports picked here can be taken by another test run before etcd binds them: such a start is retried. */
export async function startRealEtcd(name: string, options: RealEtcdOptions = {}): Promise<RealEtcd> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startRealEtcdOnce(name, options);
    } catch (err) {
      if (attempt >= 3 || !String(err).includes('address already in use')) throw err;
    }
  }
}

async function startRealEtcdOnce(name: string, options: RealEtcdOptions): Promise<RealEtcd> {
  const dir = options.tmpfs && existsSync('/dev/shm') ? mkdtempSync(join('/dev/shm', `etcetera-etcd-${name}-`)) : tempDir(`etcd-${name}`);
  const [client, peer] = [await freePort(), await freePort()];
  const clientUrl = `http://127.0.0.1:${client}`;
  const child = spawn(etcdPath, [
    '--name', name, '--data-dir', dir, '--logger', 'zap', '--log-level', 'error',
    '--listen-client-urls', clientUrl, '--advertise-client-urls', clientUrl,
    '--listen-peer-urls', `http://127.0.0.1:${peer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`,
    '--initial-cluster', `${name}=http://127.0.0.1:${peer}`,
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
    removeDir(dir);
  };
  const probe = new Etcd3({ hosts: clientUrl, dialTimeout: 1000 });
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        await probe.get('probe').string();
        return { clientUrl, stop };
      } catch (err) {
        if (attempt > 150 || child.exitCode !== null) {
          await stop();
          throw new Error(`etcd did not start: ${String(err)}\n${stderr}`);
        }
        await sleep(100);
      }
    }
  } finally {
    probe.close();
  }
}
