import type { BenchResults } from './bench-types';
import { fmt, MiB, ratio, table } from './lib/report';
import { spread } from './lib/util';
import { HEALTH_TARGETS } from './scenarios/health-checks';
import { STACK_FLOOR_SERVER } from './lib/reference-servers';
import { faultOf, LeaderFault } from './scenarios/failover';

/** Each target of the issue with the measured value and whether it is met (measured, not asserted). */
export function targets(r: BenchResults): string {
  const rows: string[][] = [];
  const verdict = (ok: boolean | null) => (ok === null ? 'not measured' : ok ? '**met**' : '**missed**');

  for (const target of HEALTH_TARGETS) {
    const s = r.health.find((h) => h.kind === 'stator' && h.target === target.key);
    const q = r.health.find((h) => h.kind === 'patroni' && h.target === target.key);
    const x = s && q ? s.result.requestsPerSecond / q.result.requestsPerSecond : NaN;
    rows.push([
      `${target.key}: req/s ≥ 20× Patroni's`,
      Number.isFinite(x)
        ? `${fmt(x, 1)}× (${fmt(s!.result.requestsPerSecond)} vs ${fmt(q!.result.requestsPerSecond)})`
        : '—',
      verdict(Number.isFinite(x) ? x >= 20 : null),
    ]);
    rows.push([
      `${target.key}: p99 ≤ 5 ms`,
      s ? `${fmt(s.result.p99Ms, 2)} ms` : '—',
      verdict(s ? s.result.p99Ms <= 5 : null),
    ]);
  }
  const sw = r.switchovers.filter((x) => x.kind === 'stator');
  const gap = spread(sw.map((x) => x.writes.gapMs));
  rows.push([
    'switchover write gap ≤ 300 ms (median)',
    gap.n ? `median ${fmt(gap.median)} ms (max ${fmt(gap.max)})` : '—',
    verdict(gap.n ? gap.median <= 300 : null),
  ]);
  const post = spread(sw.map((x) => x.postAfterPrimaryMs));
  rows.push([
    'switchover POST returns within 200 ms of the new primary answering (every run)',
    post.n ? `max ${fmt(post.max)} ms (median ${fmt(post.median)})` : '—',
    verdict(post.n ? post.max <= 200 : null),
  ]);
  const stream = spread(sw.map((x) => x.oldLeaderStreamingMs));
  rows.push([
    'switchover: old leader streaming again within 3 s of the POST (every run)',
    stream.n ? `max ${fmt(stream.max)} ms (median ${fmt(stream.median)})` : '—',
    verdict(stream.n ? stream.max <= 3000 : null),
  ]);
  for (const ttl of [10, 30]) {
    const killed = (kind: string, fault: LeaderFault = 'agent+postmaster') =>
      r.failovers.filter((x) => x.kind === kind && x.ttl === ttl && faultOf(x) === fault);
    const s = spread(killed('stator').map((x) => x.newPrimaryMs));
    const q = spread(killed('patroni').map((x) => x.newPrimaryMs));
    if (s.n === 0) continue;
    rows.push([
      `ttl ${ttl}: after kill -9 of the leader's agent and postmaster, a new primary within 3 s (every run)`,
      `max ${fmt(s.max)} ms (median ${fmt(s.median)})`,
      verdict(s.max <= 3000),
    ]);
    const alone = spread(killed('stator', 'agent').map((x) => x.newPrimaryMs));
    if (alone.n)
      rows.push([
        `ttl ${ttl}: after kill -9 of the agent alone, a new primary within the grace (3 s) + 3 s (every run)`,
        `max ${fmt(alone.max)} ms (median ${fmt(alone.median)})`,
        verdict(alone.max <= 6000),
      ]);
    const frozen = spread(killed('stator', 'frozen').map((x) => x.newPrimaryMs));
    const frozenBound = ttl * 1000 - Math.max(2, Math.min(5, ttl * 0.25)) * 1000 + 2000;
    if (frozen.n)
      rows.push([
        `ttl ${ttl}: a frozen agent's term ends within ttl − margin + 2 s = ${fmt(frozenBound)} ms (every run)`,
        `max ${fmt(frozen.max)} ms (median ${fmt(frozen.median)})`,
        verdict(frozen.max <= frozenBound),
      ]);
    const overlap = r.failovers.filter((x) => x.kind === 'stator' && x.ttl === ttl && Number.isFinite(x.twoWritersMs));
    if (overlap.length) {
      const worst = Math.max(...overlap.map((x) => x.twoWritersMs));
      rows.push([
        `ttl ${ttl}: no interval with two writable primaries (${overlap.length} runs, every fault)`,
        `longest ${fmt(worst)} ms`,
        verdict(worst === 0),
      ]);
    }
    rows.push([
      `failover at ttl ${ttl} no slower than Patroni (median kill → new primary)`,
      q.n
        ? `${fmt(s.median)} ms vs ${fmt(q.median)} ms (${ratio(s.median, q.median)})`
        : `${fmt(s.median)} ms (Patroni not measured)`,
      verdict(q.n ? s.median <= q.median : null),
    ]);
    // The kill → new primary time is mostly the lease's remaining life at the kill (uniform over a
    // loop_wait): the agent's own share is what follows the key's deletion.
    const agentPart = (kind: string) =>
      spread(killed(kind).map((x) => x.newPrimaryMs - (x.lease.keyGoneLowMs + x.lease.keyGoneHighMs) / 2));
    const sa = agentPart('stator');
    const qa = agentPart('patroni');
    if (sa.n && qa.n) {
      rows.push([
        `↳ the agent's own share at ttl ${ttl} (median leader key deleted → new primary 200)`,
        `${fmt(sa.median)} ms vs ${fmt(qa.median)} ms (${ratio(sa.median, qa.median)})`,
        verdict(sa.median <= qa.median),
      ]);
    }
  }
  const crash = spread(r.crashes.filter((x) => x.kind === 'stator').map((x) => x.writesBackMs));
  rows.push([
    'leader PostgreSQL crash → writes back within 3 s (every run)',
    crash.n ? `max ${fmt(crash.max)} ms (median ${fmt(crash.median)})` : '—',
    verdict(crash.n ? crash.max <= 3000 : null),
  ]);
  const rssAll = [...r.rssIdle, ...r.rssAfterLoad]
    .filter((x) => x.kind === 'stator' && x.agent)
    .map((x) => x.agent!.rss / MiB);
  const maxRss = rssAll.length ? Math.max(...rssAll) : NaN;
  const idle = (kind: string) =>
    spread(r.idleCpu.filter((x) => x.kind === kind).map((x) => x.agentPerMinute + (x.helperPerMinute ?? 0)));
  const idleS = idle('stator');
  const idleP = idle('patroni');
  if (idleS.n)
    rows.push([
      "idle CPU (agent + fence) no higher than Patroni's (median per minute)",
      `${fmt(idleS.median, 3)} s vs ${idleP.n ? fmt(idleP.median, 3) : '—'} s`,
      verdict(idleP.n ? idleS.median <= idleP.median : null),
    ]);
  const settledOf = (kind: string) =>
    spread(
      (r.idleCpuSettled ?? []).filter((x) => x.kind === kind).map((x) => x.agentPerMinute + (x.helperPerMinute ?? 0)),
    );
  const settledS = settledOf('stator');
  const settledP = settledOf('patroni');
  if (settledS.n) {
    rows.push([
      '↳ the same, settled (after the health-check load and 30 s of quiet)',
      `${fmt(settledS.median, 3)} s vs ${settledP.n ? fmt(settledP.median, 3) : '—'} s`,
      verdict(settledP.n ? settledS.median <= settledP.median : null),
    ]);
  }
  const fenceRss = r.rssAfterLoad.filter((x) => x.kind === 'stator' && x.helper).map((x) => x.helper!.rss / MiB);
  if (fenceRss.length)
    rows.push([
      'fence ≤ 15 MiB RSS (every node, after load)',
      `max ${fmt(Math.max(...fenceRss), 1)} MiB`,
      verdict(Math.max(...fenceRss) <= 15),
    ]);
  rows.push([
    'RSS ≤ 64 MiB per agent (every agent, idle and after load)',
    rssAll.length ? `max ${fmt(maxRss, 1)} MiB` : '—',
    verdict(rssAll.length ? maxRss <= 64 : null),
  ]);
  const floor = r.reference.find((x) => x.server === STACK_FLOOR_SERVER && x.memoryIdle && x.memoryAfterLoad);
  if (floor) {
    rows.push([
      '↳ the floor: Nest on Fastify with pg and xstate, one controller, no Stator code (RSS idle; after its load)',
      `${fmt(floor.memoryIdle!.rss / MiB, 1)} MiB; ${fmt(floor.memoryAfterLoad!.rss / MiB, 1)} MiB`,
      floor.memoryAfterLoad!.rss / MiB > 64 || floor.memoryIdle!.rss / MiB > 64
        ? 'over 64 MiB before any Stator code'
        : 'under 64 MiB',
    ]);
  }
  return table(['target', 'Stator measured', 'verdict'], rows);
}
