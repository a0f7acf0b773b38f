/**
 * etcdctl's `-w table` look (olekukonko/tablewriter as etcdctl configures it): a ruled box, headers centred,
 * cells right-aligned, one space of padding.
 *
 *   +----------------+------+
 *   |    ENDPOINT    | TERM |
 *   +----------------+------+
 *   | 127.0.0.1:2379 |    2 |
 *   +----------------+------+
 */
export function textTable(heads: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = heads.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)) + 2);
  const line = `+${widths.map((w) => '-'.repeat(w)).join('+')}+\n`;
  const center = (x: string, w: number): string => x.padStart(Math.floor((w + x.length) / 2)).padEnd(w);
  const head = `|${heads.map((h, i) => ` ${center(h, widths[i]! - 2)} `).join('|')}|\n`;
  const body = rows.map((r) => `|${r.map((x, i) => ` ${x.padStart(widths[i]! - 2)} `).join('|')}|\n`).join('');
  return line + head + line + body + line;
}
