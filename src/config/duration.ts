/**
 * Go's `time.ParseDuration`, the one parser of a duration in etcetera (STYLE: one parser per grammar): duration
 * flags and config keys (config-typed.ts), --auto-compaction-retention, the JWT token's `ttl=`, and a backup
 * schedule's `@every`. Before this file there were four, each accepting a different subset (`1h30m` was refused
 * as a retention, `1.5h` after `@every`).
 *
 * Grammar, as Go's: an optional sign, then one or more `<decimal><unit>` pairs, or the bare `0`.
 *   decimal  digits, digits "." [digits], or "." digits         ("5", "1.5", "1.", ".5")
 *   unit     ns | us | µs (U+00B5) | μs (U+03BC) | ms | s | m | h
 * Worked examples: "300ms" = 300; "1h30m" = 5,400,000; "1.5h" = 5,400,000; "-1.5s" = -1,500; ".5s" = 500;
 * "0" = 0; "1h 30m", "5", "1d", "", "+" are malformed. Beyond ±(2^63 − 1) ns (~292 years) is malformed too,
 * as Go reports overflow.
 *
 * The result is in milliseconds (fractional for ns and µs). Malformed text gives undefined: each caller words
 * the error for its own option and decides whether zero or a negative value makes sense there.
 */

const unitMs: Readonly<Record<string, number>> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, 'μs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
/** Go's limit: a time.Duration is an int64 count of nanoseconds. */
const durationMsMax = 9_223_372_036_854.775;
const pair = /(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;

export function parseDurationMs(text: string): number | undefined {
  let rest = text;
  let sign = 1;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    if (rest[0] === '-') sign = -1;
    rest = rest.slice(1);
  }
  if (rest === '0') return 0;
  if (rest === '') return undefined;
  let totalMs = 0;
  pair.lastIndex = 0;
  let at = 0;
  while (at < rest.length) {
    const m = pair.exec(rest);
    if (m === null) return undefined;
    totalMs += Number(m[1]) * (unitMs[m[2]!] as number);
    at = pair.lastIndex;
  }
  if (!(totalMs <= durationMsMax)) return undefined;
  return sign * totalMs + 0; // + 0: "-0s" is 0, not -0
}

/**
 * etcd's --auto-compaction-retention in periodic mode: a bare number is hours (etcd reads an integer; we also
 * take "1.5"), anything else a Go duration ("30m", "1h30m"). Undefined when malformed or negative.
 */
export function parseRetentionMs(text: string): number | undefined {
  const t = text.trim();
  if (/^\d+(\.\d+)?$/.test(t)) return Number(t) * 3_600_000;
  const ms = parseDurationMs(t);
  return ms === undefined || ms < 0 ? undefined : ms;
}
