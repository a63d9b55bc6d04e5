import type { FleetRun } from '../fleet-types';
import { GAP_THRESHOLD_MS } from '../scenarios/etcd-leader-kill';
import { fmt, table } from './report';

/** The report's sections for the agent alone killed, the switchover storm and the etcd leader killed. */
export function renderFleetScenarios(runs: FleetRun[]): string[] {
  const withScenarios = runs.filter((run) => run.scenarios);
  if (withScenarios.length === 0) return [];
  const label = (run: FleetRun) => [String(run.clusters), run.kind, String(run.agents)];
  return [
    "## The leader's agent alone killed",
    '',
    "`kill -9` of the leader's agent on fleet-2 (fleet-1 when alone), its postmaster left running: Stator's fence stops " +
      "it; Patroni's primary runs on, writable, until it is stopped. New primary: until another node answers 200 on " +
      '`/primary`; two writers: how long after the new primary came up the old one still acknowledged a write (a client ' +
      "writing to it alone, stopped 2 s after the new primary took writes, so Patroni's figure is a lower bound); lost: " +
      'writes either client saw acknowledged that the primary does not hold once the cluster is healthy again.',
    '',
    table(
      [
        'clusters',
        'product',
        'agents',
        'new primary ms',
        'write gap ms',
        'two writers ms',
        "old primary's last write ms",
        'lost writes',
        'rejoin ms',
        'other leaders moved',
      ],
      withScenarios.map((run) => {
        const f = run.scenarios!.agentFailover;
        return [
          ...label(run),
          f ? fmt(f.newPrimaryMs) : run.scenarios!.agentFailoverError ? 'failed' : 'not run',
          f ? fmt(f.writes.gapMs) : '—',
          f ? fmt(f.twoWritersMs) : '—',
          f ? `+${fmt(f.oldLastAckMs)}` : '—',
          f?.lostWrites !== undefined ? fmt(f.lostWrites) : '—',
          f ? fmt(f.rejoinMs) : '—',
          String(run.scenarios!.agentFailoverOtherLeadersMoved),
        ];
      }),
    ),
    '',
    '## A switchover storm',
    '',
    'Every cluster at once: `POST /switchover` (leader and its first replica) on each leader in parallel, a client ' +
      'writing to each cluster through its three nodes. Write gap: the longest interval without an acknowledged write ' +
      'from the POSTs on, over the clusters whose switchover succeeded; failed: the POST did not answer 200 or the ' +
      'candidate was not the healthy leader within 2 minutes; lost: acknowledged writes the new primary does not hold. ' +
      'The write clients reconnect after a failure with a backoff (50 ms doubling to 400 ms); their connections from ' +
      "the POSTs until all were healthy are the bench's own load.",
    '',
    table(
      [
        'clusters',
        'product',
        'agents',
        'failed',
        'write gap median ms',
        'write gap max ms',
        'slowest',
        'lost writes',
        'all healthy after ms',
        'write client connections',
        'etcd write median / p90 / max ms',
      ],
      withScenarios.map((run) => {
        const s = run.scenarios!.storm;
        if (!s) return [...label(run), 'not run', '—', '—', '—', '—', '—', '—', '—'];
        return [
          ...label(run),
          String(s.failed),
          fmt(s.gapMs.median),
          fmt(s.gapMs.max),
          s.slowest?.scope ?? '—',
          fmt(s.lostWrites),
          fmt(s.allHealthyMs),
          s.writeClientConnections === undefined ? '—' : fmt(s.writeClientConnections),
          s.etcdWriteMs ? `${fmt(s.etcdWriteMs.median)} / ${fmt(s.etcdWriteMs.p90)} / ${fmt(s.etcdWriteMs.max)}` : '—',
        ];
      }),
    ),
    ...stormFailures(withScenarios),
    '',
    '## The etcd leader killed',
    '',
    '`kill -9` of the etcd member that leads, the whole fleet running and a client writing to every cluster; the fleet ' +
      'watched for a ttl (each primary polled on `/primary` every 500 ms: an answer of 503 counts it demoted), then the ' +
      'member started again on its data. Write gaps over ' +
      `${GAP_THRESHOLD_MS} ms, and acknowledged writes the cluster's final primary does not hold.`,
    '',
    table(
      [
        'clusters',
        'product',
        'agents',
        'new etcd leader ms',
        'primaries demoted',
        'leaders moved',
        `write gaps > ${GAP_THRESHOLD_MS / 1000} s`,
        'max write gap ms',
        'lost writes',
        'member back ms',
      ],
      withScenarios.map((run) => {
        const k = run.scenarios!.etcdLeaderKill;
        if (!k) return [...label(run), 'not run', '—', '—', '—', '—', '—', '—'];
        return [
          ...label(run),
          fmt(k.newEtcdLeaderMs),
          `${k.demoted} of ${k.clusters}`,
          String(k.leadersMoved),
          String(k.gapOverThreshold),
          fmt(k.maxGapMs),
          fmt(k.lostWrites),
          fmt(k.restartMs),
        ];
      }),
    ),
  ];
}

function stormFailures(runs: FleetRun[]): string[] {
  const failures = runs.flatMap((run) =>
    (run.scenarios?.storm?.runs ?? [])
      .filter((r) => r.failure)
      .map((r) => `- ${run.kind}, ${run.clusters} clusters, ${r.scope}: ${r.failure}`),
  );
  return failures.length ? ['', 'Switchovers that failed:', '', ...failures] : [];
}
