/**
 * Cron schedules for scheduled snapshots, in the syntax k3s's `--etcd-snapshot-schedule-cron` accepts
 * (robfig/cron): five fields `minute hour day-of-month month day-of-week`, or six with seconds first; each
 * field `*`, `n`, `a-b`, `*\/n`, `a-b/n` or a comma list of those; month and weekday names (jan, mon); weekday
 * 0 or 7 is Sunday. Descriptors: `@yearly`, `@monthly`, `@weekly`, `@daily` (`@midnight`), `@hourly`, and
 * `@every <duration>` (`@every 2s`, `@every 1h30m`) for intervals not tied to the clock. Times are local, as in
 * k3s. As in Vixie cron, when both day fields are restricted a day matching either one fires.
 *
 *   parseCron('0 *\/12 * * *').next(Date.parse('2026-12-01T05:00:00')) → 2026-12-01T12:00:00 (local)
 */
import { parseDurationMs } from './duration.js';

export class CronError extends Error {
  override name = 'CronError';
}

export interface CronSchedule {
  /** The first firing time strictly after `afterMs` (wall-clock milliseconds since the epoch). */
  next(afterMs: number): number;
  readonly text: string;
}

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
}

const secondField: FieldSpec = { name: 'second', min: 0, max: 59 };
const minuteField: FieldSpec = { name: 'minute', min: 0, max: 59 };
const hourField: FieldSpec = { name: 'hour', min: 0, max: 23 };
const dayField: FieldSpec = { name: 'day of month', min: 1, max: 31 };
const monthField: FieldSpec = {
  name: 'month', min: 1, max: 12,
  names: ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'],
};
const weekdayField: FieldSpec = { name: 'day of week', min: 0, max: 7, names: ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] };

const descriptors: Record<string, string> = {
  '@yearly': '0 0 0 1 1 *',
  '@annually': '0 0 0 1 1 *',
  '@monthly': '0 0 0 1 * *',
  '@weekly': '0 0 0 * * 0',
  '@daily': '0 0 0 * * *',
  '@midnight': '0 0 0 * * *',
  '@hourly': '0 0 * * * *',
};

/** A search bound: every valid spec fires within 5 years (Feb 29 on a given weekday can take 28 years: refused). */
const searchYearsMax = 5;

export function parseCron(text: string): CronSchedule {
  const spec = text.trim();
  if (spec.startsWith('@every')) return everySchedule(spec);
  const expanded = descriptors[spec.toLowerCase()] ?? spec;
  const fields = expanded.split(/\s+/).filter((f) => f !== '');
  if (fields.length !== 5 && fields.length !== 6) {
    throw new CronError(`cron spec ${JSON.stringify(text)}: expected 5 fields (minute hour day month weekday) or 6 (seconds first), got ${fields.length}`);
  }
  const withSeconds = fields.length === 6 ? fields : ['0', ...fields];
  const [sec, min, hour, dom, month, dow] = withSeconds as [string, string, string, string, string, string];
  const weekdays = parseField(dow, weekdayField, text);
  if (weekdays.has(7)) weekdays.add(0);
  const m: Matcher = {
    seconds: parseField(sec, secondField, text),
    minutes: parseField(min, minuteField, text),
    hours: parseField(hour, hourField, text),
    days: parseField(dom, dayField, text),
    months: parseField(month, monthField, text),
    weekdays,
    daysRestricted: dom !== '*' && dom !== '?',
    weekdaysRestricted: dow !== '*' && dow !== '?',
  };
  const schedule: CronSchedule = { text: spec, next: (afterMs) => nextMatch(m, afterMs, text) };
  schedule.next(Date.UTC(2000, 0, 1)); // refuses specs that never fire (e.g. 30 February)
  return schedule;
}

function everySchedule(spec: string): CronSchedule {
  const ms = parseDurationMs(spec.slice('@every'.length).trim()) ?? Number.NaN;
  if (!(ms >= 1000)) throw new CronError(`cron spec ${JSON.stringify(spec)}: @every needs a duration of at least 1s (e.g. @every 30s, @every 1h30m, @every 1.5h)`);
  return { text: spec, next: (afterMs) => afterMs + ms };
}

function parseField(text: string, f: FieldSpec, spec: string): Set<number> {
  const out = new Set<number>();
  const bad = (why: string): CronError => new CronError(`cron spec ${JSON.stringify(spec)}: ${f.name} ${JSON.stringify(text)}: ${why}`);
  for (const part of text.split(',')) {
    const [range, stepText, extra] = part.split('/');
    if (range === undefined || range === '' || extra !== undefined) throw bad('malformed');
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(step) || step < 1) throw bad('step must be a positive integer');
    let lo: number;
    let hi: number;
    if (range === '*' || range === '?') {
      lo = f.min;
      hi = f.name === 'day of week' ? 6 : f.max;
    } else {
      const [a, b, more] = range.split('-');
      if (more !== undefined) throw bad('malformed range');
      lo = value(a!, f, bad);
      hi = b === undefined ? (stepText === undefined ? lo : f.max) : value(b, f, bad);
    }
    if (lo > hi) throw bad(`range start ${lo} is after its end ${hi}`);
    for (let v = lo; v <= hi; v += step) out.add(v);
  }
  return out;
}

function value(text: string, f: FieldSpec, bad: (why: string) => CronError): number {
  const named = f.names?.indexOf(text.toLowerCase()) ?? -1;
  const v = named >= 0 ? named + (f.name === 'month' ? 1 : 0) : /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isInteger(v) || v < f.min || v > f.max) throw bad(`must be ${f.min}-${f.max}${f.names ? ' or a name' : ''}`);
  return v;
}

interface Matcher {
  seconds: Set<number>;
  minutes: Set<number>;
  hours: Set<number>;
  days: Set<number>;
  months: Set<number>;
  weekdays: Set<number>;
  daysRestricted: boolean;
  weekdaysRestricted: boolean;
}

function dayMatches(m: Matcher, d: Date): boolean {
  const dom = m.days.has(d.getDate());
  const dow = m.weekdays.has(d.getDay());
  if (m.daysRestricted && m.weekdaysRestricted) return dom || dow;
  return dom && dow;
}

/** Walks forward field by field (month, day, hour, minute, second), jumping whole units that cannot match. */
function nextMatch(m: Matcher, afterMs: number, spec: string): number {
  const t = new Date(Math.floor(afterMs / 1000) * 1000 + 1000);
  const limit = t.getFullYear() + searchYearsMax;
  while (t.getFullYear() <= limit) {
    if (!m.months.has(t.getMonth() + 1)) {
      t.setMonth(t.getMonth() + 1, 1);
      t.setHours(0, 0, 0, 0);
    } else if (!dayMatches(m, t)) {
      t.setDate(t.getDate() + 1);
      t.setHours(0, 0, 0, 0);
    } else if (!m.hours.has(t.getHours())) {
      t.setHours(t.getHours() + 1, 0, 0, 0);
    } else if (!m.minutes.has(t.getMinutes())) {
      t.setMinutes(t.getMinutes() + 1, 0, 0);
    } else if (!m.seconds.has(t.getSeconds())) {
      t.setSeconds(t.getSeconds() + 1, 0);
    } else {
      return t.getTime();
    }
  }
  throw new CronError(`cron spec ${JSON.stringify(spec)} never fires within ${searchYearsMax} years`);
}
