import { readFileSync } from 'node:fs';
import type { BenchResults } from './bench-types';
import { fmt, MiB, ratio, spreadRow, table } from './lib/report';
import { spread } from './lib/util';
import { HEALTH_TARGETS } from './scenarios/health-checks';
import { MEMORY_READINGS } from './lib/reference-servers';
import type { RssReading } from './scenarios/footprint';
import { FailoverRun, faultOf, LEADER_FAULTS, LeaderFault } from './scenarios/failover';
import { renderSideBySide } from './scenarios/health-side-by-side';
import { targets } from './render-targets';

const FAULT_WORDS: Record<LeaderFault, string> = {
  'agent+postmaster': "kill -9 of the leader's agent and postmaster",
  agent: "kill -9 of the leader's agent alone",
  frozen: "the leader's agent frozen (SIGSTOP)",
};

/** The markdown report: one table per scenario (metric | Stator | Patroni | ratio), targets, per-run details. */
export function renderReport(r: BenchResults): string {
  const out: string[] = [];
  const p = r.patroni;
  out.push(`# Stator vs Patroni benchmark, ${r.date}${r.settings.quick ? ' (quick run: BENCH_QUICK=1)' : ''}`);
  out.push('');
  out.push(
    `\`npm run bench\`, ${fmt(r.durationS / 60, 1)} min. ${r.environment.machine}; Node ${r.environment.node}; Stator ${r.environment.stator}; ` +
      `${r.environment.patroni}; ${r.environment.etcd}; ${r.environment.postgresql}; ${r.environment.wrk}. ` +
      `Load average at start: ${r.environment.loadAtStart} (the machine is shared: see the per-run load averages).`,
  );
  out.push('');
  out.push(
    'Both clusters: 3 nodes, each with its own etcd (same binary), PostgreSQL 15 with `shared_buffers 32MB`, `max_connections 50`, ' +
      '`use_pg_rewind`, `use_slots`, `maximum_lag_on_failover 1048576`, everything on 127.0.0.1. ' +
      'ttl 10 / loop_wait 2 / retry_timeout 3 unless stated; ttl 30 / loop_wait 10 / retry_timeout 10 for the second failover table. ' +
      'Runs alternate between Stator and Patroni. Ratio = Stator ÷ Patroni (below 1 is better for times and memory, above 1 for requests per second). ' +
      'Repeated runs show min / **median** / max.',
  );
  if (!p) out.push('', `**Patroni was not measured**: ${r.notes.join('; ')}`);
  out.push('');

  out.push('## Targets', '', targets(r), '');

  // 1. Health checks
  out.push(`## 1. Health-check load (\`wrk -t2 -c16 -d${r.settings.wrkSeconds}s --latency\`)`, '');
  const healthRows: string[][] = [];
  for (const target of HEALTH_TARGETS) {
    const s = r.health.find((h) => h.kind === 'stator' && h.target === target.key);
    const q = r.health.find((h) => h.kind === 'patroni' && h.target === target.key);
    if (!s && !q) continue;
    const v = (run: typeof s, f: (x: NonNullable<typeof s>) => number, d = 0) => (run ? fmt(f(run), d) : '—');
    healthRows.push([
      `${target.label}: req/s`,
      v(s, (x) => x.result.requestsPerSecond),
      v(q, (x) => x.result.requestsPerSecond),
      ratio(s?.result.requestsPerSecond ?? NaN, q?.result.requestsPerSecond ?? NaN),
    ]);
    healthRows.push([
      `${target.label}: p50 ms`,
      v(s, (x) => x.result.p50Ms, 2),
      v(q, (x) => x.result.p50Ms, 2),
      ratio(s?.result.p50Ms ?? NaN, q?.result.p50Ms ?? NaN),
    ]);
    healthRows.push([
      `${target.label}: p99 ms`,
      v(s, (x) => x.result.p99Ms, 2),
      v(q, (x) => x.result.p99Ms, 2),
      ratio(s?.result.p99Ms ?? NaN, q?.result.p99Ms ?? NaN),
    ]);
  }
  out.push(table(['endpoint: metric', 'Stator', 'Patroni', 'ratio'], healthRows), '');
  if (r.reference.length) {
    out.push(
      'The same load on servers that only answer a 588-byte JSON document (the size of the status document) on 127.0.0.1, ' +
        "measured right after the `/primary` pair, with the agent's Node flags and environment: the ceiling of each layer of the stack on this machine at that moment, " +
        `and the memory each holds ${MEMORY_READINGS}.`,
      '',
      table(
        ['server', 'req/s', 'p50 ms', 'p99 ms', 'RSS idle MiB', 'RSS after its load MiB'],
        r.reference.map((x) => [
          x.server,
          fmt(x.result.requestsPerSecond),
          fmt(x.result.p50Ms, 2),
          fmt(x.result.p99Ms, 2),
          x.memoryIdle ? fmt(x.memoryIdle.rss / MiB, 1) : '—',
          x.memoryAfterLoad ? fmt(x.memoryAfterLoad.rss / MiB, 1) : '—',
        ]),
      ),
      '',
    );
  }
  if (r.healthBaseline?.length) {
    out.push(
      `### The health path against older code`,
      '',
      renderSideBySide(r.healthBaseline, r.settings.wrkSeconds),
      '',
    );
  }
  const codes = r.health.map(
    (h) =>
      `${h.kind} ${h.target} HTTP ${h.code}, ${h.result.requests} requests, non-2xx ${h.result.non2xx}, socket errors: ${h.result.socketErrors}, load ${h.loadBefore}`,
  );
  if (codes.length)
    out.push('<details><summary>wrk details</summary>', '', ...codes.map((c) => `- ${c}`), '', '</details>', '');

  // 2. Switchover
  out.push('## 2. Planned switchover (POST /switchover {leader, candidate} to the leader)', '');
  const sw = (kind: string) => r.switchovers.filter((x) => x.kind === kind);
  const swRow = (metric: string, f: (x: (typeof r.switchovers)[number]) => number) =>
    spreadRow(metric, sw('stator').map(f), sw('patroni').map(f));
  out.push(
    table(
      ['metric (ms, from the POST)', 'Stator', 'Patroni', 'ratio'],
      [
        swRow('candidate answers 200 on /primary', (x) => x.candidatePrimaryMs),
        swRow('POST returns', (x) => x.postReturnedMs),
        swRow('POST returns after the candidate answers 200', (x) => x.postAfterPrimaryMs),
        swRow('write gap (insert every 50 ms, read-write over all nodes)', (x) => x.writes.gapMs),
        swRow('old leader streaming from the new one', (x) => x.oldLeaderStreamingMs),
        swRow('all three nodes healthy again', (x) => x.healthyMs),
      ],
    ),
    '',
  );

  const statorRuns = sw('stator').filter((x) => x.timeline.length);
  if (statorRuns.length) {
    const byGap = [...statorRuns].sort((a, b) => a.writes.gapMs - b.writes.gapMs);
    const mid = byGap[Math.floor((byGap.length - 1) / 2)];
    out.push(
      `<details><summary>Stator's event log during the median switchover (${mid.from}→${mid.to}, write gap ${fmt(mid.writes.gapMs)} ms, ` +
        `from ${fmt(mid.writes.gapStartMs)} ms to ${fmt(mid.writes.gapStartMs + mid.writes.gapMs)} ms)</summary>`,
      '',
      '```',
      ...mid.timeline.slice(0, 60),
      '```',
      '',
      '</details>',
      '',
    );
  }

  // 3. Failover, one table per ttl and leader fault.
  for (const ttl of [10, 30]) {
    for (const fault of LEADER_FAULTS) {
      const fo = (kind: string) => r.failovers.filter((x) => x.kind === kind && x.ttl === ttl && faultOf(x) === fault);
      if (fo('stator').length + fo('patroni').length === 0) continue;
      const loopWait = (fo('stator')[0] ?? fo('patroni')[0]).loopWait;
      const row = (metric: string, f: (x: FailoverRun) => number) =>
        spreadRow(metric, fo('stator').map(f), fo('patroni').map(f));
      out.push(`## 3. Unplanned failover at ttl ${ttl} / loop_wait ${loopWait}: ${FAULT_WORDS[fault]}`, '');
      out.push(
        table(
          ['metric (ms)', 'Stator', 'Patroni', 'ratio'],
          [
            row('fault → new leader answers 200 on /primary', (x) => x.newPrimaryMs),
            row('write gap', (x) => x.writes.gapMs),
            row("old leader's last acknowledged write after the fault", (x) => x.oldLastAckMs),
            row(
              'two writable primaries (old leader acknowledging after the new one is up)',
              (x) => x.twoWritersMs ?? NaN,
            ),
            row(
              'leader key deleted → new leader answers 200 on /primary (the agent alone)',
              (x) => x.newPrimaryMs - (x.lease.keyGoneLowMs + x.lease.keyGoneHighMs) / 2,
            ),
            row('old agent back → cluster healthy again', (x) => x.rejoinMs),
          ],
        ),
        '',
      );
      if (fault !== 'agent+postmaster') continue;
      const mean = (v: number[]) => (v.length ? v.reduce((a, b) => a + b, 0) / v.length : NaN);
      const remaining = (kind: string) => mean(fo(kind).map((x) => x.lease.expiryMs));
      out.push(
        `Without a fence the lease has ttl − U(0, loop_wait) left at the kill: ${fmt(ttl - loopWait / 2, 1)} s on average. ` +
          `Measured mean until the lease ended: Stator ${fmt(remaining('stator') / 1000, 1)} s (its fence revokes the lease once the postmaster is gone), Patroni ${fmt(remaining('patroni') / 1000, 1)} s.`,
        '',
      );
    }
  }
  out.push(
    "The lease expiry comes from etcd itself: during the failover the benchmark samples `LeaseTimeToLive` of the old leader key's lease " +
      'every 20 ms (etcd truncates the remaining TTL to whole seconds, so the step from k to k−1 s pins the expiry to the sampling interval, ±10–20 ms). ' +
      "Stator's lock time is the `at` of the new leader's `leader.acquired` cluster event in the event log (`/stator-events/<scope>/` in etcd); " +
      "Patroni has no event log, so its log line `promoted self to leader by acquiring session lock` stands in. etcd's lessor looks for expired leases " +
      'every 500 ms, so the key disappears 0–500 ms after the expiry whatever the agent does; the agents can only react to the deletion.',
    '',
  );

  // 4. PostgreSQL crash
  out.push("## 4. Leader PostgreSQL crash (kill -9 of the leader's postmaster, agent alive)", '');
  const cr = (kind: string) => r.crashes.filter((x) => x.kind === kind);
  const crRow = (metric: string, f: (x: (typeof r.crashes)[number]) => number) =>
    spreadRow(metric, cr('stator').map(f), cr('patroni').map(f));
  out.push(
    table(
      ['metric (ms, from the kill)', 'Stator', 'Patroni', 'ratio'],
      [
        crRow('writes succeed again', (x) => x.writesBackMs),
        crRow('write gap', (x) => x.writes.gapMs),
        crRow('cluster healthy again', (x) => x.healthyMs),
      ],
    ),
    '',
  );

  // 5. Footprint
  out.push('## 5. Footprint (per agent process; PostgreSQL not included)', '');
  const mem = (list: RssReading[], kind: string, f: (x: RssReading) => number | undefined | null) =>
    spread(list.filter((x) => x.kind === kind).map((x) => (f(x) ?? NaN) / MiB));
  const memRow = (metric: string, list: RssReading[], f: (x: RssReading) => number | undefined | null) => {
    const s = mem(list, 'stator', f);
    const q = mem(list, 'patroni', f);
    const text = (v: typeof s) => (v.n ? `${fmt(v.min, 1)} / **${fmt(v.median, 1)}** / ${fmt(v.max, 1)}` : '—');
    return [metric, text(s), text(q), ratio(s.median, q.median)];
  };
  const cpu = (kind: string) => r.idleCpu.filter((x) => x.kind === kind).map((x) => x.agentPerMinute);
  const fenceCpu = r.idleCpu.filter((x) => x.kind === 'stator').map((x) => x.helperPerMinute ?? NaN);
  const settled = (kind: string) =>
    (r.idleCpuSettled ?? []).filter((x) => x.kind === kind).map((x) => x.agentPerMinute + (x.helperPerMinute ?? 0));
  out.push(
    table(
      ['metric (3 agents: min / median / max)', 'Stator', 'Patroni', 'ratio'],
      [
        memRow('RSS at idle, MiB', r.rssIdle, (x) => x.agent?.rss),
        memRow('RSS after the health-check load, MiB', r.rssAfterLoad, (x) => x.agent?.rss),
        memRow('↳ of which anonymous (heap, stacks), after load, MiB', r.rssAfterLoad, (x) => x.agent?.rssAnon),
        memRow(
          '↳ of which file-backed (binary, libraries; shared), after load, MiB',
          r.rssAfterLoad,
          (x) => x.agent?.rssFile,
        ),
        memRow('PSS after load (shared pages divided), MiB', r.rssAfterLoad, (x) => x.agent?.pss),
        memRow("Stator's fence process RSS after load, MiB", r.rssAfterLoad, (x) =>
          x.kind === 'stator' ? x.helper?.rss : null,
        ),
        memRow(
          "↳ the fence's own memory (anonymous; the rest is Python's interpreter and libraries), MiB",
          r.rssAfterLoad,
          (x) => (x.kind === 'stator' ? x.helper?.rssAnon : null),
        ),
        memRow("↳ the fence's PSS (shared pages divided), MiB", r.rssAfterLoad, (x) =>
          x.kind === 'stator' ? x.helper?.pss : null,
        ),
        spreadRow(`CPU seconds per idle minute (over ${r.settings.idleSeconds} s)`, cpu('stator'), cpu('patroni'), 3),
        spreadRow(
          '↳ of which the main thread',
          r.idleCpu.filter((x) => x.kind === 'stator').map((x) => x.mainThreadPerMinute),
          r.idleCpu.filter((x) => x.kind === 'patroni').map((x) => x.mainThreadPerMinute),
          3,
        ),
        spreadRow("↳ Stator's fence process, CPU seconds per idle minute", fenceCpu, [], 3),
        spreadRow(
          `CPU seconds per idle minute, settled (after the health-check load and 30 s of quiet; agent + fence)`,
          settled('stator'),
          settled('patroni'),
          3,
        ),
      ],
    ),
    '',
  );
  if (r.moduleCosts.length) {
    out.push(
      "Where a Stator agent's memory goes: a fresh `node` process loading the agent's dependencies one after the other (RSS after a full GC):",
      '',
      table(
        ['loaded (cumulative)', 'RSS MiB', 'added MiB', 'V8 heap used MiB'],
        r.moduleCosts.map((m) => [m.what, fmt(m.rssMiB, 1), fmt(m.addedMiB, 1), fmt(m.heapUsedMiB, 1)]),
      ),
      '',
    );
    const running = mem(r.rssAfterLoad, 'stator', (x) => x.agent?.rss);
    const anon = mem(r.rssAfterLoad, 'stator', (x) => x.agent?.rssAnon);
    const fence = mem(r.rssAfterLoad, 'stator', (x) => x.helper?.rss);
    const loaded = r.moduleCosts[r.moduleCosts.length - 1].rssMiB;
    if (running.n) {
      out.push(
        `A running agent holds ${fmt(running.median, 1)} MiB (median after the load; ${fmt(anon.median, 1)} MiB of it anonymous), ` +
          `${fmt(running.median - loaded, 1)} MiB more than its loaded code: run-time state (V8 heap growth, compiled code, sockets and buffers). ` +
          (fence.n
            ? `Each node also runs a fence process, a Python program of ${fmt(fence.median, 1)} MiB RSS (src/postgresql/fence/).`
            : ''),
        '',
      );
    }
  }

  // Details
  out.push('## Per-run details', '');
  for (const x of r.switchovers)
    out.push(
      `- switchover ${x.kind} ${x.from}→${x.to}: HTTP ${x.postStatus} "${x.postBody}", candidate 200 ${fmt(x.candidatePrimaryMs)} ms, POST ${fmt(x.postReturnedMs)} ms, ` +
        `gap ${fmt(x.writes.gapMs)} ms (starts ${fmt(x.writes.gapStartMs)} ms, ${x.writes.failedAttempts} failed attempts), old leader streaming ${fmt(x.oldLeaderStreamingMs)} ms, healthy ${fmt(x.healthyMs)} ms, load ${x.loadBefore}`,
    );
  for (const x of r.crashes)
    out.push(
      `- postgres crash ${x.kind} ${x.node}: writes back ${fmt(x.writesBackMs)} ms, gap ${fmt(x.writes.gapMs)} ms, leader after: ${x.leaderAfter}, healthy ${fmt(x.healthyMs)} ms, load ${x.loadBefore}`,
    );
  for (const x of r.failovers)
    out.push(
      `- failover ${x.kind} ttl ${x.ttl} (${faultOf(x)}): ${x.killed} ${fmt(x.jitterMs)} ms into the loop, ${x.newLeader} 200 at ${fmt(x.newPrimaryMs)} ms, gap ${fmt(x.writes.gapMs)} ms; ` +
        `lease expired ${fmt(x.lease.expiryMs)} ±${fmt(x.lease.expiryUncertaintyMs)} ms, key gone ${fmt(x.lease.keyGoneLowMs)}–${fmt(x.lease.keyGoneHighMs)} ms, ` +
        `lock taken ${fmt(x.acquiredMs)} ms (${x.acquiredSource}), promoted ${fmt(x.promotedMs)} ms; old leader's last write ${fmt(x.oldLastAckMs)} ms, two writers ${fmt(x.twoWritersMs)} ms; rejoin ${fmt(x.rejoinMs)} ms; load ${x.loadBefore}`,
    );
  if (r.errors.length) out.push('', '## Errors and skipped runs', '', ...r.errors.map((e) => `- ${e.split('\n')[0]}`));
  if (r.notes.length) out.push('', '## Notes', '', ...r.notes.map((n) => `- ${n}`));
  out.push('');
  return out.join('\n');
}

/** `node dist/bench/render.js bench/results/<date>.json`: the markdown again from the raw results (prints it). */
if (require.main === module) {
  const file = process.argv[2];
  if (!file) {
    process.stderr.write('usage: node dist/bench/render.js bench/results/<date>.json\n');
    process.exit(2);
  }
  const results = JSON.parse(readFileSync(file, 'utf8')) as BenchResults;
  process.stdout.write(renderReport(results));
}
