import { writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { chromiumAvailable, launchChromium } from '../../src/statecharts/chromium';
import { FleetResults, WindowedFleetRun, windowedRuns } from '../fleet-types';
import { Kind } from './cluster';

/** One line of a panel: a product's figure per fleet size (NaN: not measured, left out). */
export interface Series {
  label: string;
  color: string;
  dashed?: boolean;
  points: { n: number; y: number }[];
}

export interface Panel {
  title: string;
  unit: string;
  series: Series[];
}

const COLORS: Record<Kind, string> = { stator: '#1f6fb2', patroni: '#e07b00' };
const PANEL_W = 460;
const PANEL_H = 300;
const MARGIN = { left: 64, right: 24, top: 36, bottom: 44 };

/** The four panels the issue asks for: etcd requests/s, etcd CPU, db growth, failover time, per N and product. */
export function fleetPanels(runs: WindowedFleetRun[]): Panel[] {
  const kinds = (['stator', 'patroni'] as Kind[]).filter((kind) => runs.some((run) => run.kind === kind));
  const series = (label: string, pick: (run: WindowedFleetRun) => number, dashed = false) =>
    kinds.map((kind) => ({
      label: `${kind}${label}`,
      color: COLORS[kind],
      dashed,
      points: runs
        .filter((run) => run.kind === kind)
        .map((run) => ({ n: run.clusters, y: pick(run) }))
        .sort((a, b) => a.n - b.n),
    }));
  return [
    {
      title: 'etcd requests per second',
      unit: 'requests/s',
      series: series('', (run) => run.load.allRequestsPerSecond),
    },
    {
      title: 'etcd CPU, three members together',
      unit: 'CPU s/min',
      series: series('', (run) => run.usage.etcdCpuPerMinute),
    },
    {
      title: 'etcd database growth (file)',
      unit: 'MiB/h',
      series: series('', (run) => run.load.dbGrowthBytesPerHour / (1024 * 1024)),
    },
    {
      title: 'failover: new primary after kill -9',
      unit: 's',
      series: [
        ...series('', (run) => (run.failover ? run.failover.newPrimaryMs / 1000 : NaN)),
        ...series(
          ' (agent alone)',
          (run) => (run.scenarios?.agentFailover ? run.scenarios.agentFailover.newPrimaryMs / 1000 : NaN),
          true,
        ),
      ],
    },
  ];
}

const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Round figures for an axis from 0 to at least `max`: 1, 2 or 5 times a power of ten per step. */
export function niceTicks(max: number, count = 5): number[] {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw)!;
  const ticks: number[] = [];
  for (let v = 0; v < max + step * 0.999; v += step) ticks.push(Number(v.toPrecision(12)));
  return ticks;
}

function panelSvg(panel: Panel, x0: number, y0: number, sizes: number[]): string {
  const w = PANEL_W - MARGIN.left - MARGIN.right;
  const h = PANEL_H - MARGIN.top - MARGIN.bottom;
  const finite = panel.series.flatMap((s) => s.points.filter((p) => Number.isFinite(p.y)));
  const yTicks = niceTicks(Math.max(0, ...finite.map((p) => p.y)));
  const yMax = yTicks.at(-1)!;
  const nMin = Math.min(...sizes);
  const nMax = Math.max(...sizes);
  const px = (n: number) => x0 + MARGIN.left + (nMax === nMin ? w / 2 : ((n - nMin) / (nMax - nMin)) * w);
  const py = (y: number) => y0 + MARGIN.top + h - (y / yMax) * h;
  const out: string[] = [];
  out.push(`<text x="${x0 + MARGIN.left}" y="${y0 + 22}" class="title">${escape(panel.title)}</text>`);
  for (const tick of yTicks) {
    out.push(
      `<line x1="${x0 + MARGIN.left}" x2="${x0 + MARGIN.left + w}" y1="${py(tick)}" y2="${py(tick)}" class="grid"/>`,
    );
    out.push(`<text x="${x0 + MARGIN.left - 6}" y="${py(tick) + 4}" class="tick" text-anchor="end">${tick}</text>`);
  }
  for (const n of sizes)
    out.push(`<text x="${px(n)}" y="${y0 + MARGIN.top + h + 16}" class="tick" text-anchor="middle">${n}</text>`);
  out.push(
    `<text x="${x0 + MARGIN.left + w / 2}" y="${y0 + PANEL_H - 8}" class="axis" text-anchor="middle">clusters of 3 nodes (N)</text>`,
  );
  out.push(
    `<text transform="translate(${x0 + 16} ${y0 + MARGIN.top + h / 2}) rotate(-90)" class="axis" text-anchor="middle">${escape(panel.unit)}</text>`,
  );
  out.push(`<rect x="${x0 + MARGIN.left}" y="${y0 + MARGIN.top}" width="${w}" height="${h}" class="frame"/>`);
  const labels: { n: number; x: number; y: number; text: string; color: string; end: boolean }[] = [];
  for (const series of panel.series) {
    const points = series.points.filter((p) => Number.isFinite(p.y));
    if (points.length === 0) continue;
    const dash = series.dashed ? ' stroke-dasharray="6 4"' : '';
    out.push(
      `<polyline points="${points.map((p) => `${px(p.n).toFixed(1)},${py(p.y).toFixed(1)}`).join(' ')}" fill="none" stroke="${series.color}" stroke-width="2"${dash}/>`,
    );
    for (const p of points) {
      out.push(
        `<circle cx="${px(p.n).toFixed(1)}" cy="${py(p.y).toFixed(1)}" r="3.5" fill="${series.dashed ? 'white' : series.color}" stroke="${series.color}" stroke-width="1.5"/>`,
      );
      const last = p.n === nMax && nMax !== nMin;
      labels.push({
        n: p.n,
        x: px(p.n) + (last ? -6 : 6),
        y: py(p.y) - 6,
        text: pointLabel(p.y),
        color: series.color,
        end: last,
      });
    }
  }
  // The value beside each point (a line near zero beside one in the tens is still read), labels of one N at least
  // 12 px apart so that two lines meeting do not print one value over the other.
  for (const n of sizes) {
    const column = labels.filter((label) => label.n === n).sort((a, b) => a.y - b.y);
    for (let i = 1; i < column.length; i++) column[i].y = Math.max(column[i].y, column[i - 1].y + 12);
  }
  for (const label of labels) {
    out.push(
      `<text x="${label.x.toFixed(1)}" y="${label.y.toFixed(1)}" class="value" fill="${label.color}"${label.end ? ' text-anchor="end"' : ''}>${label.text}</text>`,
    );
  }
  return out.join('\n');
}

/** Three significant figures at most, no exponent. */
export function pointLabel(value: number): string {
  return Math.abs(value) >= 100 ? value.toFixed(0) : String(Number(value.toPrecision(3)));
}

/** The legend, once for every panel: the products' colours, and what a dashed line is. */
function legendSvg(panels: Panel[], y: number): string {
  const seen = new Map<string, string>();
  for (const series of panels.flatMap((panel) => panel.series))
    if (!series.dashed) seen.set(series.label, series.color);
  const dashed = panels.some((panel) =>
    panel.series.some((s) => s.dashed && s.points.some((p) => Number.isFinite(p.y))),
  );
  const out: string[] = [];
  let x = 12;
  for (const [label, color] of seen) {
    out.push(
      `<line x1="${x}" x2="${x + 24}" y1="${y - 4}" y2="${y - 4}" stroke="${color}" stroke-width="2"/><circle cx="${x + 12}" cy="${y - 4}" r="3.5" fill="${color}"/>`,
    );
    out.push(`<text x="${x + 30}" y="${y}" class="legend">${escape(label)}</text>`);
    x += 40 + label.length * 7;
  }
  if (dashed) {
    out.push(
      `<line x1="${x}" x2="${x + 24}" y1="${y - 4}" y2="${y - 4}" stroke="#555" stroke-width="2" stroke-dasharray="6 4"/><circle cx="${x + 12}" cy="${y - 4}" r="3.5" fill="white" stroke="#555" stroke-width="1.5"/>`,
    );
    out.push(
      `<text x="${x + 30}" y="${y}" class="legend">failover: the agent alone killed (solid: agent and postmaster)</text>`,
    );
  }
  return out.join('\n');
}

/** The panels two by two, as one SVG document. */
export function fleetPlotSvg(panels: Panel[], heading: string): string {
  const sizes = [...new Set(panels.flatMap((panel) => panel.series.flatMap((s) => s.points.map((p) => p.n))))].sort(
    (a, b) => a - b,
  );
  const columns = 2;
  const rows = Math.ceil(panels.length / columns);
  const width = PANEL_W * columns;
  const top = 54;
  const height = PANEL_H * rows + top;
  const body = panels
    .map((panel, i) =>
      panelSvg(panel, (i % columns) * PANEL_W, top + Math.floor(i / columns) * PANEL_H, sizes.length ? sizes : [1]),
    )
    .join('\n');
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="DejaVu Sans, sans-serif">`,
    '<style>.title{font-size:14px;font-weight:bold}.tick{font-size:11px;fill:#444}.axis{font-size:12px;fill:#222}.legend{font-size:12px}.value{font-size:10px}' +
      '.grid{stroke:#ddd;stroke-width:1}.frame{fill:none;stroke:#888;stroke-width:1}</style>',
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="12" y="22" font-size="15">${escape(heading)}</text>`,
    legendSvg(panels, 44),
    body,
    '</svg>',
  ].join('\n');
}

/** Renders an SVG to a PNG of its own size with headless Chromium (as the statecharts are rendered). */
export async function svgToPng(svg: string, pngPath: string): Promise<void> {
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    await page.setContent(`<!doctype html><html><body style="margin:0">${svg}</body></html>`);
    const element = await page.$('svg');
    if (!element) throw new Error('the page has no svg element');
    await element.screenshot({ path: pngPath });
  } finally {
    await browser.close();
  }
}

/** The fleet report's plot, written as `pngPath` (and its SVG beside it); a failure is returned, never thrown. */
export async function writeFleetPlot(
  results: FleetResults,
  pngPath: string,
): Promise<{ file: string } | { error: string }> {
  const runs = windowedRuns(results.runs);
  if (runs.length === 0) return { error: 'no settled window was measured' };
  const svg = fleetPlotSvg(
    fleetPanels(runs),
    `A fleet on one etcd, ${results.date}: ttl ${results.options.timing.values.ttl}, ${results.options.windowSeconds} s windows`,
  );
  writeFileSync(pngPath.replace(/\.png$/, '.svg'), svg);
  if (!chromiumAvailable()) return { error: 'no chromium to render the plot: the SVG beside the report is the plot' };
  try {
    await svgToPng(svg, pngPath);
    return { file: basename(pngPath) };
  } catch (error) {
    return { error: `the plot was not rendered: ${(error as Error).message}` };
  }
}
