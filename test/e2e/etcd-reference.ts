/**
 * Debian's etcd 3.4 as a reference process for differential end-to-end tests: started on 127.0.0.1 ports
 * the test chose, in a temporary data directory, killed by the test (or by `killEtcds` in afterAll).
 * Without /usr/bin/etcd the tests that need it skip with a message, unless CI is set.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';

export const etcdPath = '/usr/bin/etcd';

export function haveEtcd(): boolean {
  if (existsSync(etcdPath)) return true;
  if (process.env.CI) throw new Error(`${etcdPath} is missing under CI (.ci/run installs etcd-server)`);
  console.warn(`${etcdPath} not installed: skipping the tests that compare with etcd (apt-get install etcd-server)`);
  return false;
}

export interface EtcdProcess {
  proc: ChildProcess;
  output: string[];
  kill(): Promise<void>;
}

const running = new Set<EtcdProcess>();

export function startEtcd(args: string[]): EtcdProcess {
  const proc = spawn(etcdPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const collect = (chunk: Buffer): void => {
    output.push(...chunk.toString('utf8').split('\n').filter((l) => l !== ''));
    if (output.length > 2000) output.splice(0, output.length - 2000);
  };
  proc.stdout!.on('data', collect);
  proc.stderr!.on('data', collect);
  const exited = new Promise<void>((res) => proc.once('exit', () => res()));
  const e: EtcdProcess = {
    proc,
    output,
    kill: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await exited;
      running.delete(e);
    },
  };
  running.add(e);
  return e;
}

export async function killEtcds(): Promise<void> {
  await Promise.all([...running].map((e) => e.kill()));
}
