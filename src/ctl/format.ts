import { stringify } from 'yaml';
import { Format } from './args';

/** A table: column titles and rows of cells (already text). */
export interface Table {
  title?: string;
  columns: string[];
  rows: string[][];
  /** Columns aligned right (numbers). */
  right?: string[];
}

/**
 * A table in patronictl's box style:
 * ```
 * + Cluster: demo ---+---------+
 * | Member | Role    | ...
 * +--------+---------+
 * ```
 */
export function renderTable(table: Table): string {
  const widths = table.columns.map((column, index) =>
    Math.max(column.length, ...table.rows.map((row) => (row[index] ?? '').length)),
  );
  const rule = `+${widths.map((width) => '-'.repeat(width + 2)).join('+')}+`;
  const line = (cells: string[]) =>
    `| ${cells.map((cell, index) => (table.right?.includes(table.columns[index]) ? cell.padStart(widths[index]) : cell.padEnd(widths[index]))).join(' | ')} |`;
  const top = table.title ? titledRule(rule, table.title) : rule;
  return (
    [top, line(table.columns), rule, ...table.rows.map((row) => line(row.map((cell) => cell ?? ''))), rule].join('\n') +
    '\n'
  );
}

/** `+ Cluster: demo ----+---` : the title written over the start of the rule, as patronictl does. */
function titledRule(rule: string, title: string): string {
  const text = `+ ${title} `;
  if (text.length >= rule.length - 1) return `${text}+`;
  return text + rule.slice(text.length);
}

/** JSON (two-space indent) or YAML of a value, for `--format json|yaml`. */
export function renderData(value: unknown, format: Exclude<Format, 'table'>): string {
  if (format === 'json') return `${JSON.stringify(value, null, 2)}\n`;
  return stringify(value, { lineWidth: 0 });
}

/** A cell: '' for absent, the value as text, objects as compact `k: v` pairs. */
export function cell(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    return entries
      .map(
        ([key, item]) => `${key}: ${typeof item === 'object' && item !== null ? JSON.stringify(item) : String(item)}`,
      )
      .join(', ');
  }
  return String(value);
}

/** Lag in MB as patronictl shows it (bytes / 1 MiB, rounded); `unknown` stays as is. */
export function lagInMb(lag: unknown): string {
  if (typeof lag !== 'number') return lag === undefined || lag === null ? '' : String(lag);
  return String(Math.round(lag / 1024 / 1024));
}

/** `[ 1.2s]`: seconds since `start`, for progress lines. */
export function elapsed(startMs: number, nowMs: number): string {
  const seconds = Math.max(0, (nowMs - startMs) / 1000);
  return `[${seconds.toFixed(1).padStart(5)}s]`;
}
