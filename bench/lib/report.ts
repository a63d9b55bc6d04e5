import { Spread, spread } from './util';

/** Markdown helpers: every comparison is `metric | Stator | Patroni | ratio` with ratio = Stator ÷ Patroni. */

/** KiB in a MiB: memory readings (/proc) are in KiB. */
export const MiB = 1024;

export function fmt(value: number, digits = 0): string {
  if (!Number.isFinite(value)) return '—';
  return value
    .toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
    .replace(/,/g, ' ');
}

export function ratio(stator: number, patroni: number): string {
  if (!Number.isFinite(stator) || !Number.isFinite(patroni) || patroni === 0) return '—';
  const r = stator / patroni;
  return r >= 10 ? `${r.toFixed(0)}×` : r >= 1 ? `${r.toFixed(1)}×` : `${r.toFixed(2)}×`;
}

export function spreadText(s: Spread, digits = 0): string {
  if (s.n === 0) return '—';
  if (s.n === 1) return fmt(s.median, digits);
  return `${fmt(s.min, digits)} / **${fmt(s.median, digits)}** / ${fmt(s.max, digits)}`;
}

export function table(header: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

/** A row comparing repeated runs: min / median / max of each side, ratio of the medians. */
export function spreadRow(metric: string, stator: number[], patroni: number[], digits = 0): string[] {
  const s = spread(stator);
  const p = spread(patroni);
  return [metric, spreadText(s, digits), spreadText(p, digits), ratio(s.median, p.median)];
}
