/**
 * etcd's --log-outputs: 'stderr', 'stdout' or file paths (appended to, created 0600 as etcd's zap file sink).
 * Returns the logger's line sinks: the normal one, and the synchronous one `fatal` uses before exiting.
 */
import { closeSync, openSync, writeSync } from 'node:fs';

export interface LogSinks {
  sink: (line: string) => void;
  sinkSync: (line: string) => void;
  close(): void;
}

export function openLogOutputs(outputs: readonly string[]): LogSinks {
  const files: number[] = [];
  const fds = outputs.map((output) => {
    if (output === 'stderr') return 2;
    if (output === 'stdout') return 1;
    const fd = openSync(output, 'a', 0o600);
    files.push(fd);
    return fd;
  });
  const writers = fds.map((fd) => {
    if (fd === 2) return (line: string) => void process.stderr.write(line);
    if (fd === 1) return (line: string) => void process.stdout.write(line);
    // Log files are written synchronously: a line per event is small, and a crash must not lose the last ones.
    return (line: string) => void writeSync(fd, line);
  });
  return {
    sink: (line) => {
      for (const write of writers) write(line);
    },
    sinkSync: (line) => {
      for (const fd of fds) writeSync(fd, line);
    },
    close: () => {
      for (const fd of files) closeSync(fd);
    },
  };
}
