import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalCluster, LocalNode } from '../scripts/lib/local-cluster';
import { EtcdEventStore } from '../src/events/etcd-event-store';
import { NewEvent } from '../src/events/event';
import { PG_PASSWORD } from './lib/cluster';
import { cleanupAll, track } from './lib/cleanup';
import { httpJson } from './lib/http';
import { memory } from './lib/proc';
import { loadAverage, log, pollUntil, sleep } from './lib/util';
import { AgentVariant, currentVariant, parseVariants, writeLauncher } from './lib/agent-variant';
import { findRepoRoot } from './lib/preflight';

/**
 * `npm run bench:event-log`: the RSS of an agent that ran through a long event log against the same
 * agent restarted on it. One node (and its etcd); BENCH_EVENTS events (default 30,000, about the size
 * of the agent's own) are appended to the cluster's log in txns of 100 while the agent runs, as other
 * nodes' transitions would be; its RSS is read BENCH_SETTLE_S seconds (default 10, 30, 60) after the
 * last one. Then the agent is killed and started again on the same log and read at the same delays
 * after its start. BENCH_EVENT_LOG_AGENT picks the agent (a BENCH_HEALTH_VARIANTS entry; default
 * this checkout). BENCH_KEEP=1 keeps the node's directory and log.
 */
const REPO_ROOT = findRepoRoot(__dirname);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 30_000);
const SETTLE_S = (process.env.BENCH_SETTLE_S ?? '10,30,60').split(',').map(Number);
const PER_TXN = 100;

async function main(): Promise<void> {
  const baseDir = mkdtempSync(join(tmpdir(), 'stator-bench-event-log-'));
  chmodSync(baseDir, 0o755);
  const variant: AgentVariant = process.env.BENCH_EVENT_LOG_AGENT
    ? parseVariants(process.env.BENCH_EVENT_LOG_AGENT, REPO_ROOT, join(tmpdir(), 'stator-bench-builds'))[0]
    : currentVariant(REPO_ROOT);
  const cluster = await LocalCluster.start({
    nodes: 1,
    baseDir,
    scope: 'eventlog',
    pgPassword: PG_PASSWORD,
    agentProgram: writeLauncher(variant, baseDir),
  });
  track({
    label: 'event-log cluster',
    stop: () => cluster.stop(),
    pids: () => cluster.nodes.flatMap((n) => (n.pid ? [n.pid] : [])),
  });
  const node = cluster.nodes[0];
  let failed = false;
  try {
    await waitPrimary(node);
    await sleep(5000);
    const fresh = readings(node, 'fresh agent (its own events only)');
    log(fresh.text);
    const store = new EtcdEventStore({ hosts: [cluster.etcd.endpoint], scope: 'eventlog', requestTimeoutMs: 10_000 });
    const appendStarted = performance.now();
    for (let written = 0; written < EVENTS; written += PER_TXN) {
      const stream = `node/other${(written / PER_TXN) % 2}/ha`;
      await store.append(
        stream,
        Array.from({ length: Math.min(PER_TXN, EVENTS - written) }, (_, i) => syntheticEvent(stream, written + i)),
        'any',
      );
    }
    await store.close();
    log(
      `${EVENTS} events appended in ${((performance.now() - appendStarted) / 1000).toFixed(1)} s (load ${loadAverage()})`,
    );
    const ranThrough = await settledReadings(node, 'ran through the events', performance.now());
    await node.killAgent();
    node.start();
    const restartedAt = performance.now();
    await waitPrimary(node);
    const restarted = await settledReadings(node, 'restarted on the log', restartedAt);
    process.stdout.write(
      [
        '',
        `| agent (${variant.label}), ${EVENTS} events | ${SETTLE_S.map((s) => `RSS at ${s} s, MiB`).join(' | ')} | load average at the last reading |`,
        `| --- | ${SETTLE_S.map(() => '---').join(' | ')} | --- |`,
        `| fresh, before the events (at 5 s) | ${fresh.rss.toFixed(1)} | ${SETTLE_S.slice(1)
          .map(() => '')
          .join(' | ')} | ${fresh.load} |`,
        ...[ranThrough, restarted].map(
          (r) => `| ${r.label} | ${r.rss.map((x) => x.toFixed(1)).join(' | ')} | ${r.load} |`,
        ),
        '',
      ].join('\n'),
    );
  } catch (error) {
    failed = true;
    log(`aborted: ${(error as Error).stack ?? error}`);
  } finally {
    await cleanupAll();
  }
  if (failed || process.env.BENCH_KEEP === '1') log(`kept ${baseDir}`);
  else rmSync(baseDir, { recursive: true, force: true });
  process.exitCode = failed ? 1 : 0;
}

/** About the size of the agent's own HA verdicts and transitions (600-700 bytes of JSON stored). */
function syntheticEvent(stream: string, index: number): NewEvent {
  const node = stream.split('/')[1];
  const transition = index % 2 === 0;
  return {
    stream,
    type: transition ? 'postgres.transition' : 'ha.verdict',
    at: new Date().toISOString(),
    node,
    from: transition ? 'running.streaming' : null,
    to: transition ? 'running.idle' : null,
    cause: transition ? 'postgres.sampled' : 'ha.cycle',
    data: {
      verdict: `no action: I am (${node}) a secondary, and following a leader (node1); lag ${index % 4096} bytes, timeline 1, cycle ${index}`,
      sample: {
        lsn: `0/${(index * 256).toString(16).toUpperCase()}`,
        timeline: 1,
        receiving: true,
        replayPaused: false,
        lagBytes: index % 4096,
      },
    },
  };
}

async function waitPrimary(node: LocalNode): Promise<void> {
  const ok = await pollUntil(
    async () => (await httpJson(`${node.apiUrl}/stator`, 1000))?.role === 'primary',
    120_000,
    200,
  );
  if (!ok) throw new Error(`${node.name} did not become primary`);
}

function readings(node: LocalNode, label: string): { label: string; rss: number; load: string; text: string } {
  const rss = (memory(node.pid ?? 0)?.rss ?? NaN) / 1024;
  return { label, rss, load: loadAverage(), text: `${label}: RSS ${rss.toFixed(1)} MiB` };
}

/** RSS at each of SETTLE_S seconds after `since` (performance.now()). */
async function settledReadings(
  node: LocalNode,
  label: string,
  since: number,
): Promise<{ label: string; rss: number[]; load: string }> {
  const rss: number[] = [];
  for (const seconds of SETTLE_S) {
    const wait = since + seconds * 1000 - performance.now();
    if (wait > 0) await sleep(wait);
    rss.push(readings(node, label).rss);
    const reading = memory(node.pid ?? 0);
    log(
      `${label}: RSS ${rss.at(-1)!.toFixed(1)} MiB at ${seconds} s (anonymous ${((reading?.rssAnon ?? NaN) / 1024).toFixed(1)}, file ${((reading?.rssFile ?? NaN) / 1024).toFixed(1)}, threads ${reading?.threads}; load ${loadAverage()})`,
    );
  }
  return { label, rss, load: loadAverage() };
}

if (require.main === module) {
  main().catch(async (error) => {
    process.stderr.write(`${(error as Error).stack ?? error}\n`);
    await cleanupAll();
    process.exit(1);
  });
}
