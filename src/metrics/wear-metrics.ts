/**
 * etcetera_disk_*: flash wear as Prometheus families (README, "Operations"), read at scrape time from the
 * member's wear watch (main/wear-watch.ts; the maths: wear.ts).
 */
import type { Registry } from './metrics.js';
import type { WearMeter, WearView } from './wear.js';

/** What the families read (main's WearWatch). */
export interface WearSource {
  readonly meter: Pick<WearMeter, 'enduranceBytes' | 'warningYears'>;
  view(): WearView;
}

/** etcetera_disk_*: the wear watch's figures, read at scrape time. */
export function registerWearMetrics(r: Registry, watch: WearSource): void {
  const written = r.counter({ name: 'etcetera_disk_written_bytes_total', help: 'Bytes this member wrote to its disk: the WAL (records and segment preallocation) and the backend (batches and LevelDB compactions).', labelNames: ['target'] });
  const processWritten = r.counter({ name: 'etcetera_disk_process_written_bytes_total', help: 'Bytes this process caused to be written to storage (/proc/self/io write_bytes, whole pages): the cross-check of etcetera_disk_written_bytes_total.' });
  const perDay = r.gauge({ name: 'etcetera_disk_written_bytes_per_day', help: 'Bytes written per day at the rate of the last day (or since start, when younger): the larger of the member\'s and the kernel\'s count.' });
  const span = r.gauge({ name: 'etcetera_disk_rate_window_seconds', help: 'How long etcetera_disk_written_bytes_per_day was measured over.' });
  r.gauge({ name: 'etcetera_disk_endurance_bytes', help: 'The disk\'s write endurance (--storage-endurance-tbw).' }).set(watch.meter.enduranceBytes);
  r.gauge({ name: 'etcetera_disk_life_warning_years', help: 'The projected life under which the member warns (--storage-life-warning-years).' }).set(watch.meter.warningYears);
  const years = r.gauge({ name: 'etcetera_disk_projected_life_years', help: 'Years the disk\'s endurance lasts at etcetera_disk_written_bytes_per_day (+Inf while nothing is written, and while measuring: until etcetera_disk_rate_window_seconds covers an hour).' });
  const warning = r.gauge({ name: 'etcetera_disk_life_warning', help: '1 when the projected disk life is under etcetera_disk_life_warning_years (measured over an hour at least), 0 otherwise.' });
  r.onCollect(() => {
    const v = watch.view();
    written.setTotal(Math.max(written.get({ target: 'wal' }), v.total.wal), { target: 'wal' });
    written.setTotal(Math.max(written.get({ target: 'backend' }), v.total.backend), { target: 'backend' });
    if (v.total.process !== undefined) processWritten.setTotal(Math.max(processWritten.get(), v.total.process));
    perDay.set(v.rate?.perDay ?? 0);
    span.set((v.rate?.spanMs ?? 0) / 1000);
    years.set(v.projectedLifeYears ?? Infinity);
    warning.set(v.warning ? 1 : 0);
  });
}
