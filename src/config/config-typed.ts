/**
 * Typed access to the merged option sources: defaults from the table, and errors that name the flag and the
 * source its value came from.
 */
import { type OptionSpec, optionSpecs } from './config-options.js';
import { ConfigError, type RawOptions, type RawValue } from './config-sources.js';
import { parseUrlList } from './config-validate.js';
import { parseDurationMs } from './duration.js';

/** Typed access to the merged options, with defaults from the table and errors naming the source. */
export class Typed {
  #raw: RawOptions;
  constructor(raw: RawOptions) {
    this.#raw = raw;
  }
  isSet(flag: string): boolean {
    return this.#raw.has(flag);
  }
  #get(flag: string): { spec: OptionSpec; raw: RawValue } {
    const spec = optionSpecs.get(flag);
    if (spec === undefined) throw new Error(`no option ${flag}`);
    return { spec, raw: this.#raw.get(flag) ?? { value: spec.default, where: `default of --${flag}` } };
  }
  string(flag: string): string {
    return this.#get(flag).raw.value;
  }
  bool(flag: string): boolean {
    const { raw } = this.#get(flag);
    const v = raw.value.toLowerCase();
    if (['true', '1', 't', 'yes'].includes(v)) return true;
    if (['false', '0', 'f', 'no', ''].includes(v)) return false;
    throw new ConfigError(`invalid boolean value ${JSON.stringify(raw.value)} for --${flag} (from ${raw.where})`);
  }
  uint(flag: string): number {
    const { raw } = this.#get(flag);
    const text = raw.value.trim();
    const n = Number(text);
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(n)) {
      throw new ConfigError(`invalid value ${JSON.stringify(raw.value)} for --${flag} (from ${raw.where}): expected a non-negative integer`);
    }
    return n;
  }
  /** A decimal number above zero ("4", "0.5", "1e3"). */
  positiveNumber(flag: string): number {
    const { raw } = this.#get(flag);
    const text = raw.value.trim();
    const n = Number(text);
    if (text === '' || !Number.isFinite(n) || n <= 0) {
      throw new ConfigError(`invalid value ${JSON.stringify(raw.value)} for --${flag} (from ${raw.where}): expected a number above zero`);
    }
    return n;
  }
  enumValue<T extends string>(flag: string): T {
    const { spec, raw } = this.#get(flag);
    if (!(spec.values ?? []).includes(raw.value)) {
      throw new ConfigError(`invalid value ${JSON.stringify(raw.value)} for --${flag} (from ${raw.where}): must be one of ${(spec.values ?? []).join(', ')}`);
    }
    return raw.value as T;
  }
  /** Go duration text ("5s", "1m30s", "250ms", "0"), as etcd's duration flags; in milliseconds. */
  durationMs(flag: string): number {
    const { raw } = this.#get(flag);
    const ms = nonNegative(parseDurationMs(raw.value.trim()));
    if (ms === undefined) {
      throw new ConfigError(`invalid value ${JSON.stringify(raw.value)} for --${flag} (from ${raw.where}): expected a duration like 5s, 1m30s or 250ms`);
    }
    return ms;
  }
  /** Comma-separated values, blanks dropped. */
  list(flag: string): string[] {
    return this.string(flag).split(',').map((s) => s.trim()).filter((s) => s !== '');
  }
  /** Flags that were given (by any source), in table order. */
  given(): string[] {
    return [...optionSpecs.keys()].filter((f) => this.#raw.has(f));
  }
  urls(flag: string): string[] {
    return parseUrlList(this.string(flag), flag);
  }
}

const nonNegative = (ms: number | undefined): number | undefined => (ms === undefined || ms < 0 ? undefined : ms);
