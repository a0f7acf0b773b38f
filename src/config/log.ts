/**
 * Structured JSON-lines logger: one JSON object per line on stderr, shaped like etcd's zap output
 * (`level`, `ts`, `msg`, then fields), so the same log tooling reads both.
 *
 * No dependency. Child loggers carry fixed fields (e.g. `{ component: 'transport', peer: '…' }`).
 * `fatal` writes synchronously and exits: it is for broken disks and impossible states, where carrying on
 * would be worse than stopping (STYLE: an fsync error is fatal).
 */
import { writeSync } from 'node:fs';

export const logLevels = ['debug', 'info', 'warn', 'error', 'fatal'] as const;
export type LogLevel = (typeof logLevels)[number];

export type LogFields = Record<string, unknown>;

export interface Logger {
  readonly level: LogLevel;
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** Logs, flushes and exits the process with status 1. */
  fatal(msg: string, fields?: LogFields): never;
  isEnabled(level: LogLevel): boolean;
  child(fields: LogFields): Logger;
}

export interface LoggerOptions {
  level?: LogLevel;
  fields?: LogFields;
  /** Where lines go (without the trailing newline handling: each call gets one full line). Default: stderr. */
  sink?: (line: string) => void;
  /** Synchronous write used by `fatal` before exiting. Default: writeSync to fd 2. */
  sinkSync?: (line: string) => void;
  /** Default: process.exit. Tests inject a throwing function. */
  exit?: (code: number) => never;
  /** Default: ISO wall-clock time (logs are for humans and log shippers, never for logic). */
  now?: () => string;
}

const levelRank: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3, fatal: 4 };

export function isLogLevel(value: string): value is LogLevel {
  return (logLevels as readonly string[]).includes(value);
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? 'info';
  if (!isLogLevel(level)) throw new TypeError(`unknown log level ${JSON.stringify(level)}`);
  const core: LoggerCore = {
    rank: levelRank[level],
    level,
    sink: options.sink ?? ((line) => process.stderr.write(line)),
    sinkSync: options.sinkSync ?? options.sink ?? ((line) => writeSync(2, line)),
    exit: options.exit ?? ((code) => process.exit(code)),
    now: options.now ?? (() => new Date().toISOString()),
  };
  return new JsonLogger(core, options.fields ?? {});
}

/** A logger that drops everything (for tests and embedding hosts that bring their own). */
export function silentLogger(): Logger {
  return createLogger({ level: 'fatal', sink: () => {}, sinkSync: () => {} });
}

interface LoggerCore {
  rank: number;
  level: LogLevel;
  sink: (line: string) => void;
  sinkSync: (line: string) => void;
  exit: (code: number) => never;
  now: () => string;
}

class JsonLogger implements Logger {
  #core: LoggerCore;
  #fields: LogFields;

  constructor(core: LoggerCore, fields: LogFields) {
    this.#core = core;
    this.#fields = fields;
  }

  get level(): LogLevel {
    return this.#core.level;
  }

  isEnabled(level: LogLevel): boolean {
    return levelRank[level] >= this.#core.rank;
  }

  debug(msg: string, fields?: LogFields): void {
    this.#write('debug', msg, fields);
  }
  info(msg: string, fields?: LogFields): void {
    this.#write('info', msg, fields);
  }
  warn(msg: string, fields?: LogFields): void {
    this.#write('warn', msg, fields);
  }
  error(msg: string, fields?: LogFields): void {
    this.#write('error', msg, fields);
  }

  fatal(msg: string, fields?: LogFields): never {
    // Written synchronously: process.exit does not wait for an asynchronous stderr write to drain.
    this.#core.sinkSync(formatLine(this.#core.now(), 'fatal', msg, this.#fields, fields));
    return this.#core.exit(1);
  }

  child(fields: LogFields): Logger {
    return new JsonLogger(this.#core, { ...this.#fields, ...fields });
  }

  #write(level: LogLevel, msg: string, fields: LogFields | undefined): void {
    if (levelRank[level] < this.#core.rank) return;
    this.#core.sink(formatLine(this.#core.now(), level, msg, this.#fields, fields));
  }
}

/** One JSON line. Fixed keys first; a field may not overwrite them (it is prefixed instead). */
export function formatLine(ts: string, level: LogLevel, msg: string, base: LogFields, extra?: LogFields): string {
  const record: Record<string, unknown> = { level, ts, msg };
  for (const source of [base, extra]) {
    if (source === undefined) continue;
    for (const [key, value] of Object.entries(source)) {
      const name = key === 'level' || key === 'ts' || key === 'msg' ? `field.${key}` : key;
      record[name] = value;
    }
  }
  return `${JSON.stringify(record, replacer)}\n`;
}

/** bigint ids print as decimal strings (JSON has no uint64), byte arrays as hex, errors as message + stack. */
function replacer(this: Record<string, unknown>, key: string, value: unknown): unknown {
  // `this[key]` is the value before toJSON (a Buffer's toJSON would hide the bytes in a number array).
  const raw = this[key];
  if (raw instanceof Uint8Array) return Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('hex');
  if (typeof value === 'bigint') return value.toString(10);
  if (value instanceof Error) {
    const code = (value as { code?: unknown }).code;
    return { message: value.message, name: value.name, ...(code === undefined ? {} : { code }), stack: value.stack };
  }
  if (value instanceof Map) return Object.fromEntries(value);
  if (value instanceof Set) return [...value];
  return value;
}
