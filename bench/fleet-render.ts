import { FleetResults, FleetRun, windowedRuns } from './fleet-types';
import { REQUEST_KINDS } from './lib/etcd-metrics';
import { fmt, table } from './lib/report';
import { median } from './lib/util';
import { renderFleetScenarios } from './lib/fleet-scenarios-render';
import { renderExtrapolation } from './lib/fleet-extrapolation';

/** The fleet bench's markdown report: etcd's requests and resources, the agents and the failover, the other faults, the plot, 500 clusters. */
export function renderFleetReport(results: FleetResults): string {
  const o = results.options;
  const t = o.timing.values;
  const runs = [...results.runs].sort((a, b) => a.clusters - b.clusters || a.kind.localeCompare(b.kind));
  const label = (run: FleetRun) => [String(run.clusters), run.kind, String(run.agents)];
  // Runs left without their settled window (`--scenarios` without `window`) are in the failover and scenario tables only.
  const windowed = windowedRuns(runs);
  const called = (kind: string) => windowed.some((run) => (run.load.requestsPerSecond[kind] ?? 0) > 0);
  const others = [...new Set(windowed.flatMap((run) => Object.keys(run.load.requestsPerSecond)))].filter(
    (kind) => !(REQUEST_KINDS as readonly string[]).includes(kind),
  );
  const kinds = [...REQUEST_KINDS, ...others.sort()].filter(called);
  // Runs of older results have no writes by role.
  const roles = [...new Set(windowed.flatMap((run) => Object.keys(run.writesPerMinuteByRole ?? {})))].sort();
  const MiB = 1024 * 1024;
  const lines = [
    `# A fleet on one etcd, ${results.date}`,
    '',
    `Fleets of ${o.counts.join(', ')} clusters of 3 nodes (${o.products.join(' and ')}), each on a fresh 3-member etcd cluster ` +
      `(etcd's own heartbeat and election timeouts${
        o.etcdNiceness === null || o.etcdNiceness === undefined ? '' : `; its members at niceness ${o.etcdNiceness}`
      }), ttl ${t.ttl} / loop_wait ${t.loopWait} / retry_timeout ${t.retryTimeout}; ` +
      (windowed.length
        ? `measured over ${o.windowSeconds} s after every cluster was healthy and ${o.settleSeconds} s more. `
        : `${o.settleSeconds} s after every cluster was healthy, no settled window: ${(o.scenarios ?? []).join(', ')} only. `) +
      `Run took ${(results.durationS / 60).toFixed(1)} min.`,
    '',
    ...Object.entries(results.environment).map(([key, value]) => `- ${key}: ${value}`),
    '',
    '## etcd requests per second, by kind',
    '',
    'Messages etcd received per gRPC method, every member together (a keep-alive stream counts each keep-alive; `Watch` counts creates and cancels); watch events are the events etcd sent to watchers.',
    '',
    table(
      ['clusters', 'product', 'agents', ...kinds, 'all', 'watch events', 'per agent per minute'],
      windowed.map((run) => [
        ...label(run),
        ...kinds.map((kind) => fmt(run.load.requestsPerSecond[kind] ?? 0, 2)),
        fmt(run.load.allRequestsPerSecond, 1),
        fmt(run.load.watchEventsPerSecond, 2),
        fmt(run.perAgentPerMinute.requests, 1),
      ]),
    ),
    '',
    "Keys written in the window (puts and txn puts), per minute for the fleet, by the key's role: each key's `version` read before and after the window (outside it).",
    '',
    table(
      ['clusters', 'product', 'agents', ...roles, 'all'],
      windowed.map((run) => [
        ...label(run),
        ...roles.map((role) => fmt(run.writesPerMinuteByRole?.[role] ?? 0, 1)),
        fmt(
          Object.values(run.writesPerMinuteByRole ?? {}).reduce((a, b) => a + b, 0),
          1,
        ),
      ]),
    ),
    '',
    '## etcd: bytes, watchers, resources, database, write latency',
    '',
    "Bytes are etcd's gRPC counters (`etcd_network_client_grpc_received_bytes_total` / `..._sent_...`); CPU and RSS are the three members' together (/proc); the database figures are the largest member's, its growth scaled to an hour from the window; p99 from the histograms' buckets (upper bound).",
    '',
    table(
      [
        'clusters',
        'product',
        'agents',
        'KiB/s in',
        'KiB/s out',
        'KiB in / agent / min',
        'KiB out / agent / min',
        'writes/s',
        'watchers',
        'watch streams',
        'etcd CPU s/min',
        'etcd RSS MiB',
        'db MiB',
        'db in use MiB',
        'db growth MiB/h',
        'keys',
        'WAL fsync p99 ms',
        'commit p99 ms',
      ],
      windowed.map((run) => [
        ...label(run),
        fmt(run.load.bytesInPerSecond / 1024, 2),
        fmt(run.load.bytesOutPerSecond / 1024, 2),
        fmt(run.perAgentPerMinute.bytesIn / 1024, 2),
        fmt(run.perAgentPerMinute.bytesOut / 1024, 2),
        fmt(run.load.proposalsPerSecond, 1),
        fmt(run.load.watchers),
        fmt(run.load.watchStreams),
        fmt(run.usage.etcdCpuPerMinute, 2),
        fmt(run.usage.etcdRssMiB),
        fmt(run.load.dbSizeBytes / MiB, 1),
        fmt(run.load.dbInUseBytes / MiB, 1),
        fmt(run.load.dbGrowthBytesPerHour / MiB, 1),
        fmt(run.load.keys),
        fmt(run.load.walFsyncP99Ms, 1),
        fmt(run.load.backendCommitP99Ms, 1),
      ]),
    ),
    '',
    "## Agents at idle, and one cluster's failover while the others run",
    '',
    "Per agent (Stator's with its fence): CPU seconds per minute of the window and RSS at its end, median (max). Failover: `kill -9` of fleet-1's leader agent and postmaster, until another node answers 200 on `/primary` (with `--failover-samples K`: K such failovers on fleet-1, fleet-2..., each healthy before its kill, as median (min-max, K); write gap and rejoin are the first sample's); the write gap of a client writing through it; whether any other cluster's leader changed meanwhile.",
    '',
    table(
      [
        'clusters',
        'product',
        'agents',
        'healthy after s',
        'agent CPU s/min',
        'agent RSS MiB',
        'failover ms',
        'write gap ms',
        'rejoin ms',
        'other leaders moved',
      ],
      runs.map((run) => [
        ...label(run),
        fmt(run.startMs / 1000),
        run.usage ? `${fmt(run.usage.agentCpuPerMinute.median, 2)} (${fmt(run.usage.agentCpuPerMinute.max, 2)})` : '—',
        run.usage ? `${fmt(run.usage.agentRssMiB.median, 1)} (${fmt(run.usage.agentRssMiB.max, 1)})` : '—',
        failoverCell(run),
        run.failover ? fmt(run.failover.writes.gapMs) : '—',
        run.failover ? fmt(run.failover.rejoinMs) : '—',
        String(run.otherLeadersMoved),
      ]),
    ),
  ];
  // Without a settled window its three tables would be empty: they go.
  if (windowed.length === 0)
    lines.splice(
      lines.indexOf('## etcd requests per second, by kind'),
      lines.indexOf("## Agents at idle, and one cluster's failover while the others run") -
        lines.indexOf('## etcd requests per second, by kind'),
    );
  const plot =
    results.plot &&
    ('file' in results.plot
      ? `![etcd requests/s, etcd CPU, db growth and failover time per N and product](${results.plot.file})`
      : `No plot: ${results.plot.error}`);
  lines.push(
    '',
    ...renderFleetScenarios(runs),
    '',
    ...(plot ? ['## Plot', '', plot, ''] : []),
    ...renderExtrapolation(windowed),
  );
  if (results.errors.length)
    lines.push('', '## Errors', '', ...results.errors.map((error) => `- ${error.split('\n')[0]}`));
  return lines.join('\n') + '\n';
}

/** One failover's time, or the samples' median (min-max, count) with `--failover-samples`. */
function failoverCell(run: FleetRun): string {
  const samples = (run.failovers ?? (run.failover ? [run.failover] : [])).map((f) => f.newPrimaryMs);
  if (samples.length === 0) return run.failoverError ? 'failed' : 'not run';
  if (samples.length === 1) return fmt(samples[0]) + (run.failoverError ? ' (others failed)' : '');
  return `${fmt(median(samples))} (${fmt(Math.min(...samples))}-${fmt(Math.max(...samples))}, ${samples.length})`;
}
