import { describe, expect, it } from 'vitest';
import { Registry, etcdDurationBuckets, registerProcessMetrics } from '../../src/metrics/metrics.js';

interface Sample { name: string; labels: Record<string, string>; value: number }
interface Parsed { help: Map<string, string>; type: Map<string, string>; samples: Sample[] }

/** A strict parser for the 0.0.4 text format, written from the spec, to read our output back. */
function parse(text: string): Parsed {
  expect(text.endsWith('\n')).toBe(true);
  const out: Parsed = { help: new Map(), type: new Map(), samples: [] };
  for (const line of text.slice(0, -1).split('\n')) {
    const meta = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
    if (meta) {
      const [, kind, name, rest] = meta as unknown as [string, string, string, string];
      if (kind === 'HELP') out.help.set(name, rest.replace(/\\(n|\\)/g, (_m, c: string) => (c === 'n' ? '\n' : '\\')));
      else out.type.set(name, rest);
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`unparseable line: ${line}`);
    const labels: Record<string, string> = {};
    let rest = m[2] ?? '';
    while (rest.length > 0) {
      const lm = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/.exec(rest);
      if (!lm) throw new Error(`bad labels in: ${line}`);
      labels[lm[1] as string] = (lm[2] as string).replace(/\\(n|\\|")/g, (_x, c: string) => (c === 'n' ? '\n' : c));
      rest = rest.slice(lm[0].length);
    }
    const raw = m[3] as string;
    out.samples.push({ name: m[1] as string, labels, value: raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw) });
  }
  return out;
}

describe('Prometheus registry', () => {
  it('renders counters, gauges and histograms that parse back to the same values', () => {
    const r = new Registry();
    const sent = r.counter({ name: 'etcd_network_peer_sent_bytes_total', help: 'The total number of bytes sent to peers.', labelNames: ['To'] });
    const leader = r.gauge({ name: 'etcd_server_has_leader', help: 'Whether or not a leader exists. 1 is existence, 0 is not.' });
    const fsync = r.histogram({ name: 'etcd_disk_wal_fsync_duration_seconds', help: 'The latency distributions of fsync.', buckets: etcdDurationBuckets });
    sent.inc(10, { To: 'a1' });
    sent.inc(5, { To: 'a1' });
    sent.inc(1, { To: 'b2' });
    leader.set(1);
    for (const v of [0.0005, 0.003, 0.003, 100]) fsync.observe(v);
    const p = parse(r.expose());
    expect(p.type.get('etcd_network_peer_sent_bytes_total')).toBe('counter');
    expect(p.type.get('etcd_server_has_leader')).toBe('gauge');
    expect(p.type.get('etcd_disk_wal_fsync_duration_seconds')).toBe('histogram');
    expect(p.help.get('etcd_server_has_leader')).toBe('Whether or not a leader exists. 1 is existence, 0 is not.');
    const find = (name: string, labels: Record<string, string> = {}): number | undefined =>
      p.samples.find((s) => s.name === name && JSON.stringify(s.labels) === JSON.stringify(labels))?.value;
    expect(find('etcd_network_peer_sent_bytes_total', { To: 'a1' })).toBe(15);
    expect(find('etcd_network_peer_sent_bytes_total', { To: 'b2' })).toBe(1);
    expect(find('etcd_server_has_leader')).toBe(1);
    expect(find('etcd_disk_wal_fsync_duration_seconds_bucket', { le: '0.001' })).toBe(1);
    expect(find('etcd_disk_wal_fsync_duration_seconds_bucket', { le: '0.004' })).toBe(3);
    expect(find('etcd_disk_wal_fsync_duration_seconds_bucket', { le: '8.192' })).toBe(3);
    expect(find('etcd_disk_wal_fsync_duration_seconds_bucket', { le: '+Inf' })).toBe(4);
    expect(find('etcd_disk_wal_fsync_duration_seconds_count')).toBe(4);
    expect(find('etcd_disk_wal_fsync_duration_seconds_sum')).toBeCloseTo(100.0065);
    const buckets = p.samples.filter((s) => s.name.endsWith('_bucket')).map((s) => s.value);
    expect([...buckets].sort((a, b) => a - b)).toEqual(buckets); // cumulative
  });

  it('escapes label values and help text', () => {
    const r = new Registry();
    const c = r.counter({ name: 'x_total', help: 'line one\nback\\slash', labelNames: ['path'] });
    const tricky = 'a"b\\c\nd';
    c.inc(1, { path: tricky });
    const text = r.expose();
    expect(text).toContain('x_total{path="a\\"b\\\\c\\nd"} 1');
    const p = parse(text);
    expect(p.samples[0]?.labels.path).toBe(tricky);
    expect(p.help.get('x_total')).toBe('line one\nback\\slash');
  });

  it('rejects bad names, wrong labels, decreasing counters and double registration', () => {
    const r = new Registry();
    expect(() => r.counter({ name: '1bad', help: '' })).toThrow(/invalid metric name/);
    expect(() => r.counter({ name: 'ok', help: '', labelNames: ['__x'] })).toThrow(/invalid label name/);
    expect(() => r.histogram({ name: 'h', help: '', labelNames: ['le'], buckets: [1] })).toThrow(/reserved/);
    expect(() => r.histogram({ name: 'h2', help: '', buckets: [2, 1] })).toThrow(/must increase/);
    const c = r.counter({ name: 'c_total', help: '', labelNames: ['a'] });
    expect(() => c.inc(1)).toThrow(/takes labels \[a\]/);
    expect(() => c.inc(1, { a: 'x', b: 'y' })).toThrow(/takes labels/);
    expect(() => c.inc(-1, { a: 'x' })).toThrow(/only increase/);
    c.setTotal(5, { a: 'x' });
    expect(() => c.setTotal(4, { a: 'x' })).toThrow(/backwards/);
    expect(() => r.gauge({ name: 'c_total', help: '' })).toThrow(/registered twice/);
  });

  it('pulls values through collectors at scrape time and exports unlabelled zeros', () => {
    const r = new Registry();
    let applied = 0;
    const g = r.gauge({ name: 'etcetera_applied_index', help: 'Applied index.' });
    r.counter({ name: 'etcd_server_leader_changes_seen_total', help: 'Leader changes.' });
    r.onCollect(() => g.set(applied));
    applied = 42;
    registerProcessMetrics(r, 1000);
    const p = parse(r.expose());
    expect(p.samples.find((s) => s.name === 'etcetera_applied_index')?.value).toBe(42);
    expect(p.samples.find((s) => s.name === 'etcd_server_leader_changes_seen_total')?.value).toBe(0);
    expect(p.samples.find((s) => s.name === 'process_resident_memory_bytes')?.value).toBeGreaterThan(0);
    expect(p.samples.find((s) => s.name === 'process_start_time_seconds')?.value).toBe(1000);
  });
});
