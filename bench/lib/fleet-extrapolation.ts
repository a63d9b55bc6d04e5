import { DEFAULT_EVENT_LOG } from '../../src/config/event-log-config';
import type { WindowedFleetRun } from '../fleet-types';
import { Kind } from './cluster';
import { fmt, table } from './report';

/** The fleet size the issue asks about: a platform team's fleet on one etcd. */
export const EXTRAPOLATED_CLUSTERS = 500;

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/**
 * etcd's documented limits and hardware guidance (etcd v3.5 docs):
 * - https://etcd.io/docs/v3.5/dev-guide/limit/ : "The default storage size limit is 2 GiB, configurable with
 *   --quota-backend-bytes flag. 8 GiB is a suggested maximum size for normal environments";
 * - https://etcd.io/docs/v3.5/op-guide/hardware/ : example configurations by what a cluster serves, and "For heavy
 *   deployments with thousands of watchers and millions of keys, allocate 16GB to 64GB memory".
 */
export const ETCD_LIMITS = {
  defaultQuotaBytes: 2 * GiB,
  suggestedMaxQuotaBytes: 8 * GiB,
  sizes: [
    { name: 'small', clients: 100, requestsPerSecond: 200, dataBytes: 100e6 },
    { name: 'medium', clients: 500, requestsPerSecond: 1000, dataBytes: 500e6 },
    { name: 'large', clients: 1500, requestsPerSecond: 10_000, dataBytes: 1e9 },
  ],
  sources: ['https://etcd.io/docs/v3.5/dev-guide/limit/', 'https://etcd.io/docs/v3.5/op-guide/hardware/'],
} as const;

export interface LinearFit {
  intercept: number;
  slope: number;
  /** Fleet sizes the fit was made over. */
  sizes: number[];
}

/**
 * Least squares line through (N, y). With one fleet size there is no slope to measure: the line goes through the
 * origin (the figure is taken as proportional to N).
 */
export function linearFit(points: { n: number; y: number }[]): LinearFit | null {
  const finite = points.filter((p) => Number.isFinite(p.y));
  const sizes = [...new Set(finite.map((p) => p.n))].sort((a, b) => a - b);
  if (finite.length === 0) return null;
  if (sizes.length === 1) {
    const mean = finite.reduce((total, p) => total + p.y, 0) / finite.length;
    return { intercept: 0, slope: mean / sizes[0], sizes };
  }
  const meanN = finite.reduce((total, p) => total + p.n, 0) / finite.length;
  const meanY = finite.reduce((total, p) => total + p.y, 0) / finite.length;
  const covariance = finite.reduce((total, p) => total + (p.n - meanN) * (p.y - meanY), 0);
  const variance = finite.reduce((total, p) => total + (p.n - meanN) ** 2, 0);
  const slope = covariance / variance;
  return { intercept: meanY - slope * meanN, slope, sizes };
}

export const at = (fit: LinearFit | null, n: number) => (fit ? fit.intercept + fit.slope * n : NaN);

/** One figure of the fleet's load on etcd, as measured per run, with the unit it is shown in. */
interface Metric {
  name: string;
  unit: string;
  digits: number;
  value: (run: WindowedFleetRun) => number;
}

export const EXTRAPOLATED_METRICS: Metric[] = [
  { name: 'requests', unit: '/s', digits: 1, value: (run) => run.load.allRequestsPerSecond },
  { name: 'writes (raft proposals)', unit: '/s', digits: 1, value: (run) => run.load.proposalsPerSecond },
  { name: 'bytes in', unit: 'KiB/s', digits: 1, value: (run) => run.load.bytesInPerSecond / 1024 },
  { name: 'bytes out', unit: 'KiB/s', digits: 1, value: (run) => run.load.bytesOutPerSecond / 1024 },
  { name: 'watchers', unit: '', digits: 0, value: (run) => run.load.watchers },
  { name: 'keys', unit: '', digits: 0, value: (run) => run.load.keys },
  { name: 'etcd CPU', unit: 's/min', digits: 2, value: (run) => run.usage.etcdCpuPerMinute },
  { name: 'db growth (file)', unit: 'MiB/h', digits: 1, value: (run) => run.load.dbGrowthBytesPerHour / MiB },
  { name: 'db growth (in use)', unit: 'MiB/h', digits: 1, value: (run) => run.load.dbInUseGrowthBytesPerHour / MiB },
  { name: 'db in use', unit: 'MiB', digits: 1, value: (run) => run.load.dbInUseBytes / MiB },
];

export interface Extrapolation {
  clusters: number;
  kind: Kind;
  byMetric: Record<string, { fit: LinearFit | null; projected: number }>;
  /**
   * etcd's live data once every cluster's event log reached its retention (Stator: `event_log.max_bytes` per cluster
   * on top of the measured keys, held under `etcd_quota_share` of the quota by the append guard), bytes.
   */
  steadyInUseBytes: number;
  /** Whether the append guard would hold the event log back at the defaults (the logs' bound is over its share). */
  guardHoldsBack: boolean;
  /** Hours until the event logs reach their bound at the measured growth in use (Infinity: no growth measured). */
  hoursToRetention: number;
}

export function extrapolate(
  runs: WindowedFleetRun[],
  kind: Kind,
  clusters = EXTRAPOLATED_CLUSTERS,
): Extrapolation | null {
  const mine = runs.filter((run) => run.kind === kind);
  if (mine.length === 0) return null;
  const byMetric: Extrapolation['byMetric'] = {};
  for (const metric of EXTRAPOLATED_METRICS) {
    const fit = linearFit(mine.map((run) => ({ n: run.clusters, y: metric.value(run) })));
    byMetric[metric.name] = { fit, projected: at(fit, clusters) };
  }
  const measuredInUse = Math.max(0, byMetric['db in use'].projected) * MiB;
  const growthInUse = byMetric['db growth (in use)'].projected * MiB;
  const log = DEFAULT_EVENT_LOG;
  const logBound = kind === 'stator' ? clusters * log.max_bytes : 0;
  const guardBound = log.etcd_quota_bytes * log.etcd_quota_share;
  // The guard stops appends past its share; what is already there beyond it stays.
  const steadyInUseBytes =
    kind === 'stator' ? Math.min(measuredInUse + logBound, Math.max(guardBound, measuredInUse)) : measuredInUse;
  const room = steadyInUseBytes - measuredInUse;
  return {
    clusters,
    kind,
    byMetric,
    steadyInUseBytes,
    guardHoldsBack: kind === 'stator' && measuredInUse + logBound > guardBound,
    hoursToRetention: room <= 0 ? 0 : growthInUse > 0 ? room / growthInUse : Infinity,
  };
}

/** The first of etcd's documented sizes that carries `value` of the given dimension ('beyond large' past them all). */
export function etcdSizeFor(dimension: 'clients' | 'requestsPerSecond' | 'dataBytes', value: number): string {
  if (!Number.isFinite(value)) return '—';
  const size = ETCD_LIMITS.sizes.find((s) => value < s[dimension]);
  return size ? size.name : 'beyond large (xLarge)';
}

/** The report's section: the fits, the projection at 500 clusters, and where it falls among etcd's figures. */
export function renderExtrapolation(runs: WindowedFleetRun[], clusters = EXTRAPOLATED_CLUSTERS): string[] {
  const kinds = (['stator', 'patroni'] as Kind[]).filter((kind) => runs.some((run) => run.kind === kind));
  const projections = kinds.map((kind) => extrapolate(runs, kind, clusters)!);
  if (projections.length === 0) return [];
  const sizes = [...new Set(runs.map((run) => run.clusters))].sort((a, b) => a - b);
  // No "-0.0": a figure that rounds to zero is shown as zero.
  const shown = (value: number, digits: number) => fmt(Math.abs(value) < 0.5 * 10 ** -digits ? 0 : value, digits);
  const fitText = (fit: LinearFit | null, digits: number) =>
    fit
      ? `${shown(fit.intercept, digits)} ${fit.slope < 0 ? '−' : '+'} ${shown(Math.abs(fit.slope), digits + 2)} N`
      : '—';
  const lines = [
    `## ${clusters} clusters on one etcd, extrapolated`,
    '',
    `Each figure fitted with a least-squares line over the measured fleet sizes (N = ${sizes.join(', ')}` +
      `${sizes.length === 1 ? ': one size, so the line goes through the origin' : ''}) and read at N = ${clusters} ` +
      `(${clusters * 3} agents). A line through ${sizes.length} point${sizes.length === 1 ? '' : 's'} from a shared 2-core machine is a rough guide: ` +
      'the long run (N = 5, 10, 20) is the one to read.',
    '',
    table(
      ['figure', ...projections.flatMap((p) => [`${p.kind}: fit`, `${p.kind}: at ${clusters}`])],
      EXTRAPOLATED_METRICS.map((metric) => [
        `${metric.name}${metric.unit ? ` (${metric.unit})` : ''}`,
        ...projections.flatMap((p) => {
          const projected = p.byMetric[metric.name].projected;
          return [
            fitText(p.byMetric[metric.name].fit, metric.digits),
            projected < 0 ? 'below 0 (noise)' : fmt(projected, metric.digits),
          ];
        }),
      ]),
    ),
    '',
    `Against etcd's documented figures (${ETCD_LIMITS.sources.join(', ')}): storage quota 2 GiB by default ` +
      '(`--quota-backend-bytes`; past it etcd raises NOSPACE and refuses every write), 8 GiB the suggested maximum; ' +
      'example hardware by load: small < 100 clients, < 200 requests/s, ≤ 100 MB; medium < 500, < 1,000/s, ≤ 500 MB; ' +
      'large < 1,500, < 10,000/s, ≤ 1 GB; "thousands of watchers" call for 16-64 GB of memory.',
    '',
    table(
      ['at ' + clusters + ' clusters', ...projections.map((p) => p.kind)],
      [
        ['clients (agents)', ...projections.map(() => `${fmt(clusters * 3)}: ${etcdSizeFor('clients', clusters * 3)}`)],
        [
          'requests/s',
          ...projections.map(
            (p) =>
              `${fmt(p.byMetric.requests.projected, 0)}: ${etcdSizeFor('requestsPerSecond', p.byMetric.requests.projected)}`,
          ),
        ],
        ['watchers', ...projections.map((p) => fmt(p.byMetric.watchers.projected))],
        [
          'db in use as measured (young logs)',
          ...projections.map((p) => `${fmt(p.byMetric['db in use'].projected, 0)} MiB`),
        ],
        [
          'db in use once the event logs reach retention',
          ...projections.map((p) =>
            p.kind === 'stator'
              ? `${fmt(p.steadyInUseBytes / MiB, 0)} MiB (${fmt((p.steadyInUseBytes / ETCD_LIMITS.defaultQuotaBytes) * 100, 0)}% of 2 GiB)` +
                (p.guardHoldsBack
                  ? `: ${clusters} × ${DEFAULT_EVENT_LOG.max_bytes / MiB} MiB is over the guard's ${DEFAULT_EVENT_LOG.etcd_quota_share} × 2 GiB, so events wait in the nodes' queues`
                  : '') +
                `; ${etcdSizeFor('dataBytes', p.steadyInUseBytes)}`
              : `${fmt(p.steadyInUseBytes / MiB, 0)} MiB (no event log); ${etcdSizeFor('dataBytes', p.steadyInUseBytes)}`,
          ),
        ],
        [
          'hours until then, at the measured growth in use',
          ...projections.map((p) =>
            p.kind === 'stator'
              ? Number.isFinite(p.hoursToRetention)
                ? fmt(p.hoursToRetention, 0)
                : 'no growth measured'
              : '—',
          ),
        ],
        [
          'hours until the db file reaches 2 GiB without compaction',
          ...projections.map((p) => {
            const growth = p.byMetric['db growth (file)'].projected * MiB;
            return growth > 0 ? fmt(ETCD_LIMITS.defaultQuotaBytes / growth, 0) : 'no growth measured';
          }),
        ],
      ],
    ),
    '',
    `The event log's bound at the defaults: \`event_log.max_bytes\` ${DEFAULT_EVENT_LOG.max_bytes / MiB} MiB per cluster, and no append while etcd holds ` +
      `more than \`event_log.etcd_quota_share\` ${DEFAULT_EVENT_LOG.etcd_quota_share} of \`event_log.etcd_quota_bytes\` (2 GiB). ` +
      `For ${clusters} clusters to keep their whole logs, run etcd with an 8 GiB quota and set \`etcd_quota_bytes\` to match ` +
      `(${clusters} × ${DEFAULT_EVENT_LOG.max_bytes / MiB} MiB = ${fmt((clusters * DEFAULT_EVENT_LOG.max_bytes) / GiB, 1)} GiB, under half of 8 GiB). ` +
      "etcd keeps every revision until compacted: the file growth is without compaction (etcd's default; neither product compacts); " +
      'a production etcd runs `--auto-compaction-retention` and a periodic defragmentation, which give the space back. ' +
      'A negative fit is the noise of a short window: read it as no growth.',
  ];
  return lines;
}
