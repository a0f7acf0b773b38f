/**
 * The reference etcd 3.4 and etcdctl for the snapshot tests: started on 127.0.0.1 free ports in a temp data
 * dir, stopped (SIGKILL) by the returned handle. Without them the tests are skipped with a message, unless
 * CI is set (CI installs both).
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../e2e/harness.js';

export const etcdPath = '/usr/bin/etcd';
export const etcdctlPath = '/usr/bin/etcdctl';
export const haveEtcd = existsSync(etcdPath) && existsSync(etcdctlPath);
if (!haveEtcd && process.env.CI) throw new Error(`${etcdPath} and ${etcdctlPath} are required in CI for the snapshot tests`);
if (!haveEtcd) console.warn(`skipping the snapshot tests against etcd: ${etcdPath} or ${etcdctlPath} not found`);

const execFileP = promisify(execFile);

export async function etcdctl(args: string[], endpoint?: string, timeoutMs = 60_000): Promise<{ stdout: string; stderr: string }> {
  const all = endpoint === undefined ? args : ['--endpoints', endpoint, ...args];
  try {
    return await execFileP(etcdctlPath, all, { env: { ...process.env, ETCDCTL_API: '3' }, timeout: timeoutMs });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`etcdctl ${all.join(' ')} failed: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
  }
}

export interface EtcdProcess {
  endpoint: string;
  dataDir: string;
  peerUrl: string;
  stop(): Promise<void>;
}

/** Start etcd; `dataDir` given: on that (restored) directory, with the name it was restored as. */
export async function startEtcd(o: { name?: string; dataDir?: string; peerPort?: number; args?: string[] } = {}): Promise<EtcdProcess> {
  const name = o.name ?? 'ref';
  const dataDir = o.dataDir ?? (await mkdtemp(join(tmpdir(), 'etcetera-etcd-')));
  const client = await freePort();
  const peer = o.peerPort ?? (await freePort());
  const endpoint = `http://127.0.0.1:${client}`;
  const peerUrl = `http://127.0.0.1:${peer}`;
  const child: ChildProcess = spawn(etcdPath, [
    '--name', name, '--data-dir', dataDir, '--logger', 'zap', '--log-level', 'error',
    '--listen-client-urls', endpoint, '--advertise-client-urls', endpoint,
    '--listen-peer-urls', peerUrl, '--initial-advertise-peer-urls', peerUrl,
    '--initial-cluster', `${name}=${peerUrl}`,
    ...(o.args ?? []),
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await etcdctl(['endpoint', 'health', '--command-timeout=2s'], endpoint);
      return { endpoint, dataDir, peerUrl, stop };
    } catch (err) {
      if (Date.now() > deadline || child.exitCode !== null) {
        await stop();
        throw new Error(`etcd did not start: ${String(err)}\n${stderr}`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
