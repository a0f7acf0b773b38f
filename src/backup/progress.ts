/**
 * Progress of a long transfer (snapshot save, restore, migrate): a redrawn bar on a terminal, a line every
 * `lineIntervalMs` otherwise (logs, CI), so a large restore never looks hung. Wall time only decides when
 * to print.
 */
const barWidth = 30;
const redrawIntervalMs = 100;
const lineIntervalMs = 5_000;

export interface ProgressOutput {
  write(text: string): unknown;
  isTTY?: boolean;
}

/** go-humanize's Bytes (what etcdctl prints): SI units, one decimal below 10. */
export function humanBytes(n: number): string {
  if (n < 10) return `${n} B`;
  const units = ['B', 'kB', 'MB', 'GB', 'TB', 'PB'];
  const e = Math.min(Math.floor(Math.log(n) / Math.log(1000)), units.length - 1);
  const v = n / 1000 ** e;
  const text = v < 10 ? (Math.floor(v * 10 + 0.5) / 10).toFixed(1) : String(Math.floor(v + 0.5));
  return `${text} ${units[e]}`;
}

export class Progress {
  readonly #label: string;
  readonly #out: ProgressOutput;
  readonly #unit: 'bytes' | 'records';
  #total: number | undefined;
  #lastDraw = 0;
  #drawn = false;

  constructor(label: string, out: ProgressOutput, unit: 'bytes' | 'records' = 'bytes') {
    this.#label = label;
    this.#out = out;
    this.#unit = unit;
  }

  set total(n: number | undefined) {
    this.#total = n;
  }

  #amount(n: number): string {
    return this.#unit === 'bytes' ? humanBytes(n) : `${n.toLocaleString('en-US')} records`;
  }

  update(done: number): void {
    const now = Date.now();
    const tty = this.#out.isTTY === true;
    if (now - this.#lastDraw < (tty ? redrawIntervalMs : lineIntervalMs)) return;
    this.#lastDraw = now;
    this.#draw(done, tty);
  }

  #draw(done: number, tty: boolean): void {
    const total = this.#total;
    const pct = total !== undefined && total > 0 ? Math.min(100, Math.floor((done / total) * 100)) : undefined;
    const amount = total !== undefined ? `${this.#amount(done)} / ${this.#amount(total)}` : this.#amount(done);
    if (tty) {
      const filled = pct === undefined ? 0 : Math.round((pct / 100) * barWidth);
      const bar = pct === undefined ? '' : `[${'#'.repeat(filled)}${'.'.repeat(barWidth - filled)}] ${String(pct).padStart(3)}% `;
      this.#out.write(`\r${this.#label}: ${bar}${amount}\u001b[K`);
      this.#drawn = true;
    } else {
      this.#out.write(`${this.#label}: ${amount}${pct === undefined ? '' : ` (${pct}%)`}\n`);
    }
  }

  /** The final state, and a newline after a bar. */
  done(done: number): void {
    const tty = this.#out.isTTY === true;
    if (tty || this.#lastDraw !== 0) this.#draw(done, tty);
    if (tty && this.#drawn) this.#out.write('\n');
  }
}
