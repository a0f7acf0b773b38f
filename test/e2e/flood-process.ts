/**
 * A flood from its own process (auth-flood-caller.mjs, auth-lockout-caller.mjs), so that it does not slow the
 * test's own event loop. The script prints `flooding` once every caller is under way and, at the end, one
 * JSON line: the number of calls and of each answer.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';

export interface FloodResult {
  calls: number;
  answers: Record<string, number>;
}

export interface Flood {
  started: Promise<void>;
  done: Promise<FloodResult>;
  /** Whether the flood has ended (its time ran out, or it was finished or stopped). */
  ended(): boolean;
  /** Ends the flood now and lets it report (scripts that handle SIGTERM: auth-lockout-caller.mjs). */
  finish(): void;
  /** Kills it without a report. */
  stop(): void;
}

export function floodProcess(script: string, args: Array<string | number>): Flood {
  const p = spawn(process.execPath, [join(import.meta.dirname, script), ...args.map(String)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  let started: () => void = () => {};
  const startedP = new Promise<void>((resolve) => (started = resolve));
  p.stdout.on('data', (b: Buffer) => {
    out += b.toString();
    if (out.startsWith('flooding\n')) started();
  });
  const done = new Promise<FloodResult>((resolve, reject) => {
    p.once('error', reject);
    p.once('exit', (code) => {
      started();
      if (code !== 0) return reject(new Error(`the flood exited with ${code}`));
      resolve(JSON.parse(out.trim().split('\n').at(-1)!) as FloodResult);
    });
  });
  return {
    started: startedP,
    done,
    ended: () => p.exitCode !== null || p.signalCode !== null,
    finish: () => void p.kill('SIGTERM'),
    stop: () => void p.kill('SIGKILL'),
  };
}
