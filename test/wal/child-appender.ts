/**
 * A child process for the real-process WAL tests (run with tsx).
 *   append <dir> <concurrency>  open the WAL (profile ssd, 1 MiB segments), continue the log after what was
 *                               recovered, keep <concurrency> saves in flight forever, print "ack <index>"
 *                               on stdout once each is durable (stdout to a pipe is synchronous on Linux, so
 *                               a printed ack happened before any later SIGKILL). On a WAL failure: print
 *                               the error on stderr and exit 2.
 *   hold <dir>                  open the WAL, print "ready", wait to be killed.
 */
import { Wal } from '../../src/wal/wal.js';

export function entryData(index: number): Uint8Array {
  const data = new Uint8Array(256);
  for (let i = 0; i < data.length; i++) data[i] = (index * 31 + i) & 0xff;
  return data;
}

async function append(dir: string, concurrency: number): Promise<void> {
  const { wal, state } = await Wal.open(dir, {
    profile: 'ssd',
    tuning: { segmentBytes: 1 << 20 },
    onFatal: (err) => {
      process.stderr.write(`fatal: ${err.message}\n`);
      process.exit(2);
    },
  });
  let next = state.snapshot.index + state.entries.length + 1;
  process.stdout.write(`start ${next}\n`);
  const loop = async (): Promise<void> => {
    for (;;) {
      const index = next++;
      await wal.save({ entries: [{ term: 1, index, type: 0, data: entryData(index) }] });
      process.stdout.write(`ack ${index}\n`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
}

async function hold(dir: string): Promise<void> {
  await Wal.open(dir, { profile: 'ssd', tuning: { segmentBytes: 1 << 16 } });
  process.stdout.write('ready\n');
  setInterval(() => {}, 1000);
}

const [mode, dir, arg] = process.argv.slice(2);
if (mode !== undefined && dir !== undefined) {
  const run = mode === 'append' ? append(dir, Number(arg ?? 1)) : hold(dir);
  run.catch((err: unknown) => {
    process.stderr.write(`error: ${String(err)}\n`);
    process.exit(3);
  });
}
