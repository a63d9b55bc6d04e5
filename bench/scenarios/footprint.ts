import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { BenchCluster } from '../lib/cluster';
import { cpuSeconds, memory, MemoryReading } from '../lib/proc';
import { log, sleep } from '../lib/util';

export interface RssReading {
  kind: string;
  node: string;
  role: string;
  agent: MemoryReading | null;
  /** Stator's fence process (null for Patroni). */
  helper: MemoryReading | null;
}

/** Scenario 5a: RSS of every agent (and Stator's fence) right now. */
export function rss(cluster: BenchCluster, leaderName: string): RssReading[] {
  return cluster.nodes.map((node) => {
    const agent = node.agentPid();
    const helper = node.helperPids()[0];
    return {
      kind: cluster.kind,
      node: node.name,
      role: node.name === leaderName ? 'leader' : 'replica',
      agent: agent ? memory(agent) : null,
      helper: helper ? memory(helper) : null,
    };
  });
}

export interface CpuReading {
  kind: string;
  node: string;
  /** CPU seconds (user + system) of the agent process per minute of idle wall time. */
  agentPerMinute: number;
  /** Of which the main thread (the event loop; the rest is V8's GC/compiler threads and libuv's pool). */
  mainThreadPerMinute: number;
  helperPerMinute: number | null;
}

/** Scenario 5b: CPU seconds of every agent over `seconds` of idle time, every cluster at once, scaled to one minute. */
export async function idleCpu(clusters: BenchCluster[], seconds: number): Promise<CpuReading[]> {
  const pids = clusters.flatMap((c) =>
    c.nodes.map((n) => ({ kind: c.kind, node: n.name, agent: n.agentPid(), helper: n.helperPids()[0] ?? null })),
  );
  const before = pids.map((p) => ({
    agent: p.agent ? cpuSeconds(p.agent) : null,
    main: p.agent ? cpuSeconds(p.agent, true) : null,
    helper: p.helper ? cpuSeconds(p.helper) : null,
  }));
  const started = performance.now();
  await sleep(seconds * 1000);
  const minutes = (performance.now() - started) / 60_000;
  return pids.map((p, i) => {
    const agentAfter = p.agent ? cpuSeconds(p.agent) : null;
    const mainAfter = p.agent ? cpuSeconds(p.agent, true) : null;
    const m0 = before[i].main;
    const helperAfter = p.helper ? cpuSeconds(p.helper) : null;
    const a0 = before[i].agent;
    const h0 = before[i].helper;
    return {
      kind: p.kind,
      node: p.node,
      agentPerMinute: agentAfter !== null && a0 !== null ? (agentAfter - a0) / minutes : NaN,
      mainThreadPerMinute: mainAfter !== null && m0 !== null ? (mainAfter - m0) / minutes : NaN,
      helperPerMinute: helperAfter !== null && h0 !== null ? (helperAfter - h0) / minutes : null,
    };
  });
}

export interface ModuleCost {
  what: string;
  /** RSS of a fresh `node` process after loading it (and everything before it in the list), MiB. */
  rssMiB: number;
  heapUsedMiB: number;
  /** RSS added by this step, MiB. */
  addedMiB: number;
}

/**
 * Where a Stator agent's memory goes: a fresh Node process loads the agent's dependencies one
 * after the other (cumulatively, in the order the agent does) and reports its RSS after each, after
 * a GC. The last step loads the agent's entry module without starting it; what a running agent
 * holds beyond that is its run-time state (heap growth, compiled code, sockets, buffers).
 */
export function moduleCosts(repoRoot: string): ModuleCost[] {
  // In the order the agent loads them (dist/src/cli/main.js pulls in exactly these packages), and as
  // it loads them: @nestjs/common through src/cli/load-dependencies-lightly.ts.
  const lightly = JSON.stringify(join(repoRoot, 'dist', 'src', 'cli', 'load-dependencies-lightly.js'));
  const steps: [string, string][] = [
    ['node itself (empty script)', ''],
    [
      '@nestjs/common (with rxjs, reflect-metadata), pg: as the agent loads them',
      `require(${lightly}); require('pg');`,
    ],
    ['@nestjs/core', "require('@nestjs/core');"],
    ['@nestjs/platform-fastify (fastify)', "require('@nestjs/platform-fastify');"],
    ['xstate', "require('xstate');"],
    ['yaml', "require('yaml');"],
    [
      'Stator itself (dist/src/cli/main.js, not started)',
      `require(${JSON.stringify(join(repoRoot, 'dist', 'src', 'cli', 'main.js'))});`,
    ],
  ];
  const script = `
    const out = [];
    const measure = (what) => { global.gc(); global.gc(); const m = process.memoryUsage(); out.push({ what, rss: m.rss, heapUsed: m.heapUsed }); };
    ${steps.map(([what, code]) => `try { ${code} } catch (e) { out.push({ what: ${JSON.stringify(what)} + ' (failed: ' + e.message + ')', rss: NaN, heapUsed: NaN }); } measure(${JSON.stringify(what)});`).join('\n')}
    process.stdout.write(JSON.stringify(out));
  `;
  try {
    const output = execFileSync(process.execPath, ['--expose-gc', '-e', script], {
      cwd: repoRoot,
      timeout: 60_000,
    }).toString();
    const rows = JSON.parse(output) as { what: string; rss: number; heapUsed: number }[];
    const MiB = 1024 * 1024;
    return rows.map((r, i) => ({
      what: r.what,
      rssMiB: r.rss / MiB,
      heapUsedMiB: r.heapUsed / MiB,
      addedMiB: i === 0 ? r.rss / MiB : (r.rss - rows[i - 1].rss) / MiB,
    }));
  } catch (error) {
    log(`module cost measurement failed: ${(error as Error).message}`);
    return [];
  }
}
