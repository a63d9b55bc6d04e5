import type { LbResults } from './lb-types';
import { fmt, spreadText, table } from './lib/report';
import { spread } from './lib/util';
import type { LbRun } from './scenarios/load-balancer';

/** Targets of issue 20 for Stator behind the shipped HAProxy configuration. */
const SWITCHOVER_GAP_TARGET_MS = 1500;
const FENCED_FAILOVER_GAP_TARGET_MS = 3000;

/** The markdown report of `npm run lb-bench`: targets, one comparison table, per-run details. */
export function renderLbReport(r: LbResults): string {
  const out: string[] = [];
  const columns = columnsOf(r);
  out.push(
    r.pgbouncer
      ? `# Load balancers: Stator through PgBouncer and HAProxy, ${r.date}`
      : `# Load balancers: Stator vs Patroni through HAProxy, ${r.date}`,
    '',
  );
  out.push(
    `\`npm run lb-bench\`, ${fmt(r.durationS / 60, 1)} min. ${r.environment.machine}; Node ${r.environment.node}; Stator ${r.environment.stator}; ` +
      `${r.environment.patroni}; ${r.environment.etcd}; ${r.environment.postgresql}; HAProxy ${r.environment.haproxy}. Load average at start: ${r.environment.loadAtStart} ` +
      '(2 shared cores: the load average before each run is in the details).',
    '',
    `Stator's \`load_balancer_drain_ms\`: ${fmt(r.statorDrainMs)}. Both clusters: 3 nodes, ttl ${r.timing.ttl} / loop_wait ${r.timing.loopWait} / retry_timeout ${r.timing.retryTimeout}, each behind its own HAProxy: ${r.targets.join('; ')}. ` +
      'Through HAProxy, a writer opens a new connection and inserts a tagged row every 50 ms on the primary port; a reader opens a new connection every 20 ms on the replica port and ' +
      "asks `pg_is_in_recovery()`: a read answered `false` was routed to a primary. Switchover: `POST /switchover {leader, candidate}`; failover: `kill -9` of the leader's agent " +
      'and postmaster at a random moment of the HA loop, then the agent is started again. Runs alternate between the clusters; min / **median** / max.',
    '',
  );
  if (r.pgbouncer) {
    out.push(
      "With `--pgbouncer`: the writer connects to PgBouncer (the shipped deploy/pgbouncer.ini, Debian's PgBouncer as the postgres OS user), which sends every " +
        'statement through HAProxy\'s primary port; "write gap" and "failed writes" are what that client saw.',
      '',
    );
  }
  out.push('## Targets (Stator, shipped configuration)', '', targets(r), '');
  out.push('## Side by side', '', table(['measurement', ...columns.map((c) => c.title)], rows(r, columns)), '');
  for (const [event, runs] of [
    ['switchover', r.switchovers],
    ['failover', r.failovers],
  ] as const) {
    const stator = runs.filter((x) => x.kind === 'stator');
    const median = stator.sort((a, b) => a.gapMs - b.gapMs)[Math.floor(stator.length / 2)];
    if (median?.moments.length) {
      out.push(
        `<details><summary>Stator's load balancer moments in the median ${event} (${median.from}→${median.to}, write gap ${fmt(median.gapMs)} ms)</summary>`,
        '',
        '```',
        ...median.moments,
        '```',
        '',
        '</details>',
        '',
      );
    }
  }
  out.push('## Per-run details', '');
  for (const run of [...r.switchovers, ...r.failovers]) out.push(`- ${detail(run)}`);
  if (r.errors.length) out.push('', '## Errors', '', ...r.errors.map((e) => `- ${e}`));
  return out.join('\n') + '\n';
}

interface Column {
  title: string;
  pick: (run: LbRun) => boolean;
}

function columnsOf(r: LbResults): Column[] {
  const all = [...r.switchovers, ...r.failovers];
  const key = (run: LbRun) => `${run.kind}/${run.flavour}${run.viaPgbouncer ? '+pgbouncer' : ''}`;
  const seen = [...new Set(all.map(key))].sort((a, b) =>
    a.startsWith('stator') ? -1 : b.startsWith('stator') ? 1 : a.localeCompare(b),
  );
  const titles: Record<string, string> = {
    'stator/stator': 'Stator, shipped config',
    'stator/stator+pgbouncer': 'Stator, shipped configs, writer through PgBouncer',
    'patroni/patroni-documented': "Patroni 3.0.2, Patroni's documented config",
    'patroni/stator': "Patroni 3.0.2, Stator's shipped config",
  };
  return seen.map((column) => ({ title: titles[column] ?? column, pick: (run) => key(run) === column }));
}

function rows(r: LbResults, columns: Column[]): string[][] {
  const cells = (runs: LbRun[], value: (run: LbRun) => number, digits = 0) =>
    columns.map((c) => spreadText(spread(runs.filter(c.pick).map(value)), digits));
  const total = (runs: LbRun[], value: (run: LbRun) => number) =>
    columns.map((c) => {
      const picked = runs.filter(c.pick);
      return picked.length ? `${fmt(picked.reduce((sum, run) => sum + value(run), 0))} in ${picked.length} runs` : '—';
    });
  const so = r.switchovers;
  const fo = r.failovers;
  return [
    ['switchover: candidate answers 200 on /primary, ms from the POST', ...cells(so, (x) => x.primaryMs)],
    ['switchover: first write on the new leader through HAProxy, ms', ...cells(so, (x) => x.firstWriteOnNewMs)],
    ['switchover: **write gap through HAProxy**, ms', ...cells(so, (x) => x.gapMs)],
    [
      'switchover: **reads routed to a primary** through the replica port, per switchover',
      ...cells(so, (x) => x.misroutedReads),
    ],
    ['↳ in all', ...total(so, (x) => x.misroutedReads)],
    ['switchover: writes that failed (the client got an error)', ...total(so, (x) => x.failedWrites ?? 0)],
    ['switchover: **acknowledged writes lost**', ...total(so, (x) => x.lost)],
    ['failover: another node answers 200 on /primary, ms from the kill', ...cells(fo, (x) => x.primaryMs)],
    ['failover: first write on the new leader through HAProxy, ms', ...cells(fo, (x) => x.firstWriteOnNewMs)],
    ['failover: **write gap through HAProxy**, ms', ...cells(fo, (x) => x.gapMs)],
    [
      'failover: **reads routed to a primary** through the replica port, per failover',
      ...cells(fo, (x) => x.misroutedReads),
    ],
    ['↳ in all', ...total(fo, (x) => x.misroutedReads)],
    ['failover: writes that failed (the client got an error)', ...total(fo, (x) => x.failedWrites ?? 0)],
    ['failover: acknowledged writes lost (asynchronous replication: not a target)', ...total(fo, (x) => x.lost)],
    ['failover: killed agent restarted → cluster healthy, ms', ...cells(fo, (x) => x.rejoinMs)],
  ];
}

function targets(r: LbResults): string {
  const so = r.switchovers.filter((x) => x.kind === 'stator' && x.flavour === 'stator');
  const fo = r.failovers.filter((x) => x.kind === 'stator' && x.flavour === 'stator');
  const max = (runs: LbRun[], value: (run: LbRun) => number) => (runs.length ? Math.max(...runs.map(value)) : NaN);
  const sum = (runs: LbRun[], value: (run: LbRun) => number) => runs.reduce((s, run) => s + value(run), 0);
  const verdict = (ok: boolean, enough = true) => (!enough ? '**not enough runs**' : ok ? '**met**' : '**missed**');
  const ttlMs = r.timing.ttl * 1000 + 1000;
  const rows = [
    [
      'switchover write gap ≤ 1.5 s (every run)',
      `max ${fmt(max(so, (x) => x.gapMs))} ms over ${so.length}`,
      verdict(max(so, (x) => x.gapMs) <= SWITCHOVER_GAP_TARGET_MS, so.length > 0),
    ],
    [
      `failover write gap ≤ ttl + 1 s = ${fmt(ttlMs)} ms (every run)`,
      `max ${fmt(max(fo, (x) => x.gapMs))} ms over ${fo.length}`,
      verdict(max(fo, (x) => x.gapMs) <= ttlMs, fo.length > 0),
    ],
    [
      "failover write gap ≤ 3 s with the fence ending the dead leader's term (every run)",
      `max ${fmt(max(fo, (x) => x.gapMs))} ms`,
      verdict(max(fo, (x) => x.gapMs) <= FENCED_FAILOVER_GAP_TARGET_MS, fo.length > 0),
    ],
    [
      '0 reads routed to a primary through the replica port, ≥ 10 switchovers',
      `${sum(so, (x) => x.misroutedReads)} in ${so.length} switchovers`,
      verdict(sum(so, (x) => x.misroutedReads) === 0, so.length >= 10),
    ],
    [
      '0 reads routed to a primary through the replica port, ≥ 10 failovers',
      `${sum(fo, (x) => x.misroutedReads)} in ${fo.length} failovers`,
      verdict(sum(fo, (x) => x.misroutedReads) === 0, fo.length >= 10),
    ],
    [
      '0 acknowledged writes lost in switchovers',
      `${sum(so, (x) => x.lost)} of ${sum(so, (x) => x.acknowledged)}`,
      verdict(sum(so, (x) => x.lost) === 0, so.length > 0),
    ],
  ];
  return table(['target', 'measured', 'verdict'], rows);
}

function detail(run: LbRun): string {
  const misrouted = run.misroutedReads ? ` (${run.misroutedOn.join(', ')})` : '';
  const rejoin = Number.isFinite(run.rejoinMs) ? `, rejoined ${fmt(run.rejoinMs)} ms` : '';
  const errors = run.writeErrors?.length ? ` (${run.writeErrors.join('; ')})` : '';
  return (
    `${run.event} ${run.kind}/${run.flavour} ${run.from}→${run.to}: /primary 200 +${fmt(run.primaryMs)} ms, first write on it +${fmt(run.firstWriteOnNewMs)} ms, ` +
    `write gap ${fmt(run.gapMs)} ms (from +${fmt(run.gapStartMs)} ms), reads on a primary ${run.misroutedReads} of ${run.reads}${misrouted}, failed reads ${run.failedReads}, failed writes ${run.failedWrites ?? 0}${errors}, ` +
    `writes lost ${run.lost} of ${run.acknowledged}${rejoin}, load ${run.loadBefore}`
  );
}
