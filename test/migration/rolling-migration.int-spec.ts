import { setTimeout as sleep } from 'node:timers/promises';
import { loadavg } from 'node:os';
import { query } from '../../bench/lib/sql';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';
import { PATRONI_REFERENCE_VERSION, STATOR_VERSION } from '../../src/version';
import { AckedWriter } from './lib/acked-writer';
import { ASYNC_CRASH_WINDOW_MS, LossLedger } from './lib/loss-ledger';
import { MixedCluster } from './lib/mixed-cluster';
import { MixedNode } from './lib/mixed-node';
import { RoleWatch } from './lib/role-watch';
import { startWatchedWriter } from './lib/watched-writer';
import {
  asPatroniReadsIt,
  figures,
  inSeconds,
  record,
  statorEvents,
  swapAgent,
  switchover as patronictlSwitchover,
} from './migration-steps';

/**
 * Issue 17: a running 3-node Patroni 3.0.2 cluster (Debian's package, etcd v3, ttl 10, loop_wait 2,
 * retry_timeout 3) with a writer running is migrated to Stator one node at a time and back, through
 * switchovers, failovers both ways, pause, scheduled operations and synchronous mode in a mixed cluster.
 * The scenarios run in sequence on the one cluster; each checks that no node was recloned (same data
 * directory inode, same system identifier as `initialize`) and, at the end, that no acknowledged write
 * was lost.
 */
jest.setTimeout(600_000);

const PATRONI_VERSION = '3.0.2';
let baseDir: string;
let cluster: MixedCluster;
let writer: AckedWriter;
const inodes = new Map<string, number>();
let sysid: string;
/** What the Patroni leader published before the migration: the shape a Stator leader's keys must have. */
let patroniLeaderKey: Record<string, unknown>;
let patroniStatus: Record<string, unknown>;
/** Each acknowledged write's fate, read on the leader after every step; each leader's kill -9 and each handover. */
let ledger: LossLedger;
let watch: RoleWatch;

/** The nodes by role: the lock holder and the others. */
async function roles(): Promise<{ leader: MixedNode; replicas: MixedNode[] }> {
  const leader = await cluster.waitForHealthy();
  return { leader, replicas: cluster.replicasOf(leader) };
}

/** patronictl's switchover, with the handover logged (the new timeline's switch point against the old primary's last write). */
async function switchover(
  _: MixedCluster,
  candidate: MixedNode,
  scheduledAt?: string,
): Promise<{ primaryMs: number; allStreamingMs: number }> {
  const old = cluster.node((await cluster.leaderName()) ?? '');
  const timing = await patronictlSwitchover(cluster, candidate, scheduledAt);
  await ledger.handover(`switchover (${old.agent} -> ${candidate.agent})`, old, candidate);
  return timing;
}

function expectNoReclone(): void {
  for (const node of cluster.nodes) {
    expect(node.dataDirInode()).toBe(inodes.get(node.name));
    expect(node.systemIdentifier()).toBe(sysid);
  }
}

async function memberKey(node: MixedNode): Promise<Record<string, unknown>> {
  return waitFor(() => cluster.jsonKey(`members/${node.name}`), {
    timeoutMs: 20_000,
    description: `${node.name}'s member key`,
  });
}

beforeAll(async () => {
  baseDir = tmpDir('stator-migration-');
  cluster = await MixedCluster.start(baseDir);
  for (const node of cluster.nodes) node.start('patroni');
  const leader = await cluster.waitForHealthy(120_000, 'the Patroni cluster bootstrapped, every replica streaming');
  for (const node of cluster.nodes) inodes.set(node.name, node.dataDirInode());
  sysid = (await cluster.key('initialize')) ?? '';
  patroniLeaderKey = (await cluster.jsonKey(`members/${leader.name}`)) ?? {};
  patroniStatus = await waitFor(() => cluster.jsonKey('status'), {
    timeoutMs: 10_000,
    description: "the Patroni leader's /status",
  });
  ({ writer, ledger, watch } = await startWatchedWriter(cluster, baseDir, leader.pgPort));
  await sleep(1000);
});

beforeEach(() => writer?.mark(expect.getState().currentTestName ?? ''));

afterEach(async () => {
  await ledger?.afterStep(expect.getState().currentTestName ?? '');
});

afterAll(async () => {
  await writer?.stop();
  await watch?.stop();
  await cluster?.stop();
  // The agents' logs stay for a look when a write went missing that no crash explains.
  const keep = ledger && ledger.unexplained().length > 0;
  if (baseDir && !keep) removeDir(baseDir);
  if (ledger)
    process.stdout.write(
      `\nwrites and handovers${keep ? ` (logs kept in ${baseDir})` : ''}:\n${ledger.lines.join('\n')}\n`,
    );
  process.stdout.write(
    `\nissue 17 figures (load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}):\n${JSON.stringify(figures, null, 2)}\n`,
  );
});

describe('rolling migration from Patroni 3.0.2 to Stator and back, with a writer running', () => {
  let first: MixedNode; // the first node to run Stator

  it('swaps a Patroni replica for Stator on the same data directory: it streams with no reclone, patronictl lists three healthy members', async () => {
    const { leader, replicas } = await roles();
    first = replicas[0];
    record('swap Patroni -> Stator (start to streaming)', await swapAgent(cluster, first, 'stator'));
    expect(sysid).toMatch(/^\d{10,}$/);
    expectNoReclone();
    const list = await waitFor(
      async () => {
        const members = await cluster.list();
        return members.length === 3 && members.every((m) => m.State === 'running' || m.State === 'streaming')
          ? members
          : null;
      },
      { timeoutMs: 20_000, description: 'patronictl list: three running members' },
    );
    expect(list.find((m) => m.Member === leader.name)?.Role).toBe('Leader');
  });

  it("publishes a member key a Patroni peer reads as a current Patroni's, with every field the reference writes", async () => {
    const statorKey = await memberKey(first);
    const leaderName = await cluster.leaderName();
    const patroniReplica = cluster.nodes.find((node) => node !== first && node.name !== leaderName)!;
    const patroniKey = await memberKey(patroniReplica);
    expect(statorKey).toMatchObject({
      version: PATRONI_REFERENCE_VERSION,
      stator_version: STATOR_VERSION,
      role: 'replica',
      state: 'running',
    });
    expect(statorKey.api_url).toBe(`${first.apiUrl}/patroni`);
    expect(statorKey.conn_url).toBe(`postgres://127.0.0.1:${first.pgPort}/postgres`);
    expect(typeof statorKey.xlog_location).toBe('number');
    expect(typeof statorKey.timeline).toBe('number');
    expect(patroniKey.version).toBe(PATRONI_VERSION);
    // Every field a Patroni replica publishes, Stator publishes too (with the same types).
    for (const [field, value] of Object.entries(patroniKey)) {
      expect([field, typeof statorKey[field]]).toEqual([field, typeof value]);
    }
    // No member below 2.1.0: the Patroni leader has no reason to write the legacy /optime/leader key.
    expect(await cluster.key('optime/leader')).toBeNull();
  });

  it('switches over to the Stator node with patronictl; both Patroni nodes stream from it; a Patroni peer trusts its checkpoint_after_promote', async () => {
    const from = performance.now();
    const { primaryMs, allStreamingMs } = await switchover(cluster, first);
    record('switchover Patroni -> Stator: candidate primary', primaryMs);
    record('switchover Patroni -> Stator: both Patroni nodes streaming', allStreamingMs);
    record('switchover Patroni -> Stator: longest write gap', writer.longestGap(from));
    const members: Record<string, string> = {};
    for (const node of cluster.nodes) members[node.name] = (await cluster.key(`members/${node.name}`)) ?? '{}';
    const seen = await waitFor(
      async () => {
        const leaderKey = (await cluster.key(`members/${first.name}`)) ?? '{}';
        const verdict = await asPatroniReadsIt(first.name, leaderKey, { ...members, [first.name]: leaderKey });
        return verdict.checkpointAfterPromote === true ? verdict : null;
      },
      { timeoutMs: 20_000, description: "a Patroni peer reading the Stator leader's checkpoint_after_promote as done" },
    );
    expect(seen).toEqual({ version: [4, 1, 4], checkpointAfterPromote: true, writesLegacyOptime: false });
    // The same key with Stator's own version, as it was published before: the peer would run a CHECKPOINT on
    // the leader itself (None) and keep writing /optime/leader.
    const leaderKey = (await cluster.key(`members/${first.name}`)) ?? '{}';
    const asBefore = JSON.stringify({ ...JSON.parse(leaderKey), version: STATOR_VERSION });
    expect(await asPatroniReadsIt(first.name, asBefore, { ...members, [first.name]: asBefore })).toEqual({
      version: [0, 1, 0],
      checkpointAfterPromote: null,
      writesLegacyOptime: true,
    });
    figures['Patroni peer before pg_rewind from a Stator leader'] =
      'checkpoint_after_promote trusted (no CHECKPOINT of its own)';
    const status = (await cluster.jsonKey<Record<string, unknown>>('status')) ?? {};
    expect(typeof status.optime).toBe('number');
    // Every key Patroni 3.0.2 wrote, and beyond them only what Patroni 4.1 writes too (the members' slots with the
    // leader's own position, `retain_slots`), which a 3.0.2 peer reads past.
    expect(Object.keys(status)).toEqual(expect.arrayContaining(Object.keys(patroniStatus)));
    expect(
      Object.keys(status).filter((key) => !(key in patroniStatus) && !['retain_slots', 'slots'].includes(key)),
    ).toEqual([]);
    // Every field the Patroni leader published, the Stator leader publishes with the same type (3.0.2 says
    // role "master", Stator "primary": the reference reads both).
    const statorLeaderKey = JSON.parse((await cluster.key(`members/${first.name}`)) ?? '{}') as Record<string, unknown>;
    for (const [field, value] of Object.entries(patroniLeaderKey))
      expect([field, typeof statorLeaderKey[field]]).toEqual([field, typeof value]);
    expect(['master', 'primary']).toContain(statorLeaderKey.role);
    const history = await cluster.jsonKey<unknown[][]>('history');
    expect(history?.at(-1)?.[4]).toBe(first.name);
    expect(await cluster.key('optime/leader')).toBeNull();
    expectNoReclone();
  });

  it('switches back over to a Patroni node', async () => {
    const target = cluster.nodes.find((node) => node.agent === 'patroni')!;
    const from = performance.now();
    const { primaryMs } = await switchover(cluster, target);
    record('switchover Stator -> Patroni: candidate primary', primaryMs);
    record('switchover Stator -> Patroni: longest write gap', writer.longestGap(from));
    expectNoReclone();
  });

  it('fails over to a Patroni node when the Stator leader loses its agent and postmaster (kill -9); Stator rewinds and follows', async () => {
    await switchover(cluster, first);
    const from = performance.now();
    await ledger.kill(first);
    const patroniNodes = cluster.nodes.filter((node) => node.agent === 'patroni');
    const winner = await waitFor(
      async () => {
        for (const node of patroniNodes)
          if ((await cluster.leaderName()) === node.name && (await node.writable())) return node;
        return null;
      },
      { timeoutMs: 40_000, intervalMs: 50, description: 'a Patroni node writable after the Stator leader died' },
    );
    record('failover Stator -> Patroni (kill -9): Patroni node writable', performance.now() - from);
    await ledger.handover('failover (kill -9 of the Stator leader)', first, winner);
    await waitFor(() => !first.fenceAlive(), { timeoutMs: 15_000, description: "the dead leader's fence gone" }).catch(
      () => first.clearLeftovers(),
    );
    first.start('stator');
    await cluster.waitUntilStreaming(first, winner, performance.now(), 90_000);
    expect(first.logOf('stator')).toMatch(/rewind/i);
    expectNoReclone();
  });

  it('fails over to a Stator node when the Patroni leader dies, by the reference rules (nofailover respected), and the Patroni node rewinds from it', async () => {
    const { leader, replicas } = await roles();
    const second = replicas.find((node) => node.agent === 'patroni')!;
    second.setTags({ nofailover: true });
    record('swap Patroni -> Stator (second node)', await swapAgent(cluster, second, 'stator'));
    await cluster.waitForHealthy();
    const from = performance.now();
    await ledger.kill(leader);
    await waitFor(async () => (await cluster.leaderName()) === first.name && (await first.writable()), {
      timeoutMs: 40_000,
      intervalMs: 50,
      description: `${first.name} (Stator, failover allowed) writable; ${second.name} has nofailover`,
    });
    record('failover Patroni -> Stator (kill -9): Stator node writable', performance.now() - from);
    await ledger.handover('failover (kill -9 of the Patroni leader)', leader, first);
    expect(await cluster.leaderName()).toBe(first.name);
    await leader.clearLeftovers();
    leader.start('patroni');
    await cluster.waitUntilStreaming(leader, first, performance.now(), 90_000);
    await cluster.waitForHealthy();
    const log = leader.logOf('patroni');
    expect(log).not.toMatch(/Can not use .* for rewind/);
    figures['Patroni rewind from the Stator leader'] = /running pg_rewind from/.test(log)
      ? 'pg_rewind ran'
      : 'no rewind needed';
    second.setTags({ nofailover: false });
    await cluster.patronictl('reload', cluster.scope, second.name, '--force');
    expectNoReclone();
  });

  it('records each member once per agent it was seen with (member.agent_seen)', async () => {
    const events = await statorEvents(first, 'member.agent_seen');
    const seenBy = events.filter((event) => event.node === first.name);
    // Once per member per change of agent, as each agent process sees it: a restarted agent (the kill -9 above)
    // records the members' current agents once more.
    const agents = (member: string) =>
      seenBy
        .filter((e) => e.data.member === member)
        .map((e) => e.data.agent)
        .filter((agent, i, all) => i === 0 || all[i - 1] !== agent);
    expect(agents(first.name)).toContain(`stator ${STATOR_VERSION}`);
    const second = cluster.nodes.find((node) => node !== first && node.agent === 'stator')!;
    expect(agents(second.name)).toEqual([`patroni ${PATRONI_VERSION}`, `stator ${STATOR_VERSION}`]);
  });
});

describe('a mixed cluster: pause, scheduled operations and synchronous mode through either agent', () => {
  const memberKeys = async () => Promise.all(cluster.nodes.map((node) => cluster.jsonKey(`members/${node.name}`)));

  it('pause set through a Patroni node is honoured by the Stator nodes, resume through the Stator leader by the Patroni node', async () => {
    const patroniNode = cluster.nodes.find((node) => node.agent === 'patroni')!;
    const answer = await fetch(`${patroniNode.apiUrl}/config`, {
      method: 'PATCH',
      body: JSON.stringify({ pause: true }),
    });
    expect(answer.status).toBe(200);
    await waitFor(async () => (await memberKeys()).every((key) => key?.pause === true), {
      timeoutMs: 20_000,
      description: 'every member paused',
    });
    for (const node of cluster.nodes.filter((n) => n.agent === 'stator'))
      expect((await node.status())?.pause).toBe(true);
    await cluster.patronictl('resume', cluster.scope, '--wait');
    await waitFor(async () => (await memberKeys()).every((key) => key && key.pause === undefined), {
      timeoutMs: 20_000,
      description: 'no member paused',
    });
  });

  it('runs restarts patronictl scheduled on a Patroni and a Stator node, and a scheduled switchover from the Stator leader to the Patroni node', async () => {
    const { replicas } = await roles();
    const before = new Map(replicas.map((node) => [node.name, node.postmasterPid()]));
    for (const node of replicas)
      await cluster.patronictl('restart', cluster.scope, node.name, '--scheduled', inSeconds(4), '--force');
    await waitFor(
      () => replicas.every((node) => node.postmasterPid() !== before.get(node.name) && node.postmasterAlive()),
      {
        timeoutMs: 40_000,
        description: 'both replicas restarted at the scheduled time',
      },
    );
    await cluster.waitForHealthy();
    const patroniNode = cluster.nodes.find((node) => node.agent === 'patroni')!;
    const { primaryMs } = await switchover(cluster, patroniNode, inSeconds(5));
    record('scheduled switchover Stator -> Patroni: primary after patronictl', primaryMs);
    expect(await cluster.jsonKey('failover')).toEqual({});
    expectNoReclone();
  });

  it('maximum_lag_on_failover: the Patroni leader dies, a Stator replica lagging past the limit behind /status does not take over, the caught-up one does', async () => {
    const started = performance.now();
    const { leader, replicas } = await roles();
    expect(leader.agent).toBe('patroni');
    const [lagging, caughtUp] = replicas;
    const original = (await cluster.jsonKey<{ maximum_lag_on_failover?: number }>('config'))?.maximum_lag_on_failover;
    const limit = 512 * 1024;
    await cluster.patronictl('edit-config', cluster.scope, '--force', '-s', `maximum_lag_on_failover=${limit}`);
    await waitFor(
      async () => {
        for (const node of replicas) {
          const config = (await (
            await fetch(`${node.apiUrl}/config`, { signal: AbortSignal.timeout(1000) })
          ).json()) as { maximum_lag_on_failover?: number };
          if (config.maximum_lag_on_failover !== limit) return false;
        }
        return true;
      },
      { timeoutMs: 10_000, description: `maximum_lag_on_failover ${limit} seen by both replicas` },
    );
    // Replay paused alone would not do: either agent publishes the greater of received and replayed.
    const resume = await lagging.stopWalReceiver();
    try {
      await query(
        leader.pgPort,
        "CREATE TABLE migration_lag_fill AS SELECT g, repeat('x', 500) AS pad FROM generate_series(1, 8000) g",
        10_000,
      );
      await query(leader.pgPort, 'DROP TABLE migration_lag_fill', 10_000);
      // What a Patroni member compares (is_lagging): /status optime against the xlog_location a member publishes.
      const lags = await waitFor(
        async () => {
          const optime = (await cluster.jsonKey<{ optime?: number }>('status'))?.optime ?? 0;
          const lagOf = async (node: MixedNode) =>
            optime - Number((await cluster.jsonKey(`members/${node.name}`))?.xlog_location ?? optime);
          const [behind, current] = [await lagOf(lagging), await lagOf(caughtUp)];
          return behind > limit && current <= limit ? { behind, current } : null;
        },
        {
          timeoutMs: 15_000,
          description: `${lagging.name}'s published lag past ${limit} bytes, ${caughtUp.name}'s within it`,
        },
      );
      figures['lag of the stopped Stator replica behind /status at the kill'] =
        `${(lags.behind / 1048576).toFixed(1)} MB (limit ${limit / 1024} kB)`;
      const logFrom = lagging.logOf('stator').length;
      const from = performance.now();
      await ledger.kill(leader);
      await waitFor(async () => (await cluster.leaderName()) === caughtUp.name && (await caughtUp.writable()), {
        timeoutMs: 40_000,
        intervalMs: 50,
        description: `${caughtUp.name} (caught up) writable; ${lagging.name} lags past maximum_lag_on_failover`,
      });
      record(
        'failover Patroni -> Stator past a lagging Stator replica (kill -9): caught-up node writable',
        performance.now() - from,
      );
      await ledger.handover('failover (kill -9 of the Patroni leader, a replica lagging)', leader, caughtUp);
      expect(await cluster.leaderName()).toBe(caughtUp.name);
      expect(await lagging.writable()).toBe(false);
      // The lagging node either lost the race on the lag rule or saw the new leader before it raced.
      figures['lagging Stator replica in the race'] = lagging
        .logOf('stator')
        .slice(logFrom)
        .includes('My wal position exceeds maximum replication lag')
        ? 'declined: My wal position exceeds maximum replication lag'
        : 'did not race (the caught-up node took the lock first)';
    } finally {
      resume();
    }
    await leader.clearLeftovers();
    leader.start('patroni');
    await cluster.patronictl(
      'edit-config',
      cluster.scope,
      '--force',
      '-s',
      `maximum_lag_on_failover=${original ?? 'null'}`,
    );
    await Promise.all(
      [lagging, leader].map((node) => cluster.waitUntilStreaming(node, caughtUp, performance.now(), 60_000)),
    );
    await switchover(cluster, leader);
    expect((await cluster.jsonKey<{ maximum_lag_on_failover?: number }>('config'))?.maximum_lag_on_failover).toBe(
      original,
    );
    record('maximum_lag_on_failover step, the way back included', performance.now() - started);
    expectNoReclone();
  });

  it('synchronous mode: the /sync key the Patroni leader writes is honoured by the Stator nodes, and the other way; /failsafe written by either', async () => {
    await cluster.patronictl(
      'edit-config',
      cluster.scope,
      '--force',
      '-s',
      'synchronous_mode=true',
      '-s',
      'failsafe_mode=true',
    );
    // /failsafe as the reference writes it: every member's name and api_url, whichever agent leads.
    const failsafeOf = async (leader: MixedNode) =>
      waitFor(
        async () => {
          if ((await cluster.leaderName()) !== leader.name) return null;
          const failsafe = await cluster.jsonKey<Record<string, string>>('failsafe');
          const wanted = Object.fromEntries(cluster.nodes.map((node) => [node.name, `${node.apiUrl}/patroni`]));
          return failsafe &&
            JSON.stringify(Object.entries(failsafe).sort()) === JSON.stringify(Object.entries(wanted).sort())
            ? failsafe
            : null;
        },
        { timeoutMs: 30_000, description: `/failsafe written by ${leader.name} with every member's api_url` },
      );
    const syncOf = async (leader: MixedNode) =>
      waitFor(
        async () => {
          const sync = await cluster.jsonKey<{ leader: string; sync_standby: string | null }>('sync');
          if (sync?.leader !== leader.name || !sync.sync_standby) return null;
          const rows = await query<{ application_name: string; sync_state: string }>(
            leader.pgPort,
            'SELECT application_name, sync_state FROM pg_stat_replication',
          );
          return rows.some((row) => row.application_name === sync.sync_standby && row.sync_state === 'sync')
            ? sync.sync_standby
            : null;
        },
        { timeoutMs: 40_000, description: `/sync written by ${leader.name} and its standby synchronous` },
      );
    const patroniLeader = (await roles()).leader;
    expect(patroniLeader.agent).toBe('patroni');
    await failsafeOf(patroniLeader);
    const standby = cluster.node(await syncOf(patroniLeader));
    expect(standby.agent).toBe('stator');
    expect((await standby.status())?.sync_standby ?? (await standby.status())?.replication_state).toBeTruthy();
    // A switchover in synchronous mode goes to the synchronous standby only: the Stator node named by Patroni.
    await switchover(cluster, standby);
    const next = cluster.node(await syncOf(standby));
    expect(next).not.toBe(standby);
    await failsafeOf(standby);
    await cluster.patronictl(
      'edit-config',
      cluster.scope,
      '--force',
      '-s',
      'synchronous_mode=false',
      '-s',
      'failsafe_mode=false',
    );
    await waitFor(async () => !(await cluster.jsonKey<{ sync_standby?: string }>('sync'))?.sync_standby, {
      timeoutMs: 30_000,
      description: '/sync cleared',
    });
  });
});

describe('the last node to Stator, then the way back to Patroni node by node', () => {
  it('replaces the last Patroni node: three Stator agents on the original data', async () => {
    const last = cluster.nodes.find((node) => node.agent === 'patroni')!;
    if ((await cluster.leaderName()) === last.name)
      await switchover(
        cluster,
        cluster.nodes.find((n) => n !== last)!,
      );
    record('swap Patroni -> Stator (last node)', await swapAgent(cluster, last, 'stator'));
    expect(cluster.nodes.every((node) => node.agent === 'stator')).toBe(true);
    await cluster.waitForHealthy();
    expectNoReclone();
  });

  it('goes back: each Stator replica replaced by Patroni, a switchover to Patroni, then the last node', async () => {
    const { leader, replicas } = await roles();
    for (const node of replicas)
      record(`swap Stator -> Patroni (${node.name})`, await swapAgent(cluster, node, 'patroni'));
    const from = performance.now();
    const { primaryMs } = await switchover(cluster, replicas[0]);
    record('switchover Stator -> Patroni (way back): candidate primary', primaryMs);
    record('switchover Stator -> Patroni (way back): longest write gap', writer.longestGap(from));
    record(`swap Stator -> Patroni (${leader.name})`, await swapAgent(cluster, leader, 'patroni'));
    expect(cluster.nodes.every((node) => node.agent === 'patroni')).toBe(true);
    const list = await cluster.list();
    expect(list).toHaveLength(3);
    expectNoReclone();
  });

  it('lost no acknowledged write across every step but those of an asynchronous leader just before its crash', async () => {
    await writer.stop();
    expect(await ledger.afterStep('the end, the writer stopped')).toBe(true);
    figures['acknowledged writes'] = writer.acked.length;
    figures['acknowledged writes lost'] = ledger.losses.length;
    figures[`of them acknowledged on a leader within ${ASYNC_CRASH_WINDOW_MS} ms before its kill -9 ended`] =
      ledger.losses.length - ledger.unexplained().length;
    expect(
      ledger
        .unexplained()
        .map((loss) => `${ledger.describe(loss)}, seen missing on ${loss.readOn} after "${loss.seenAfter}"`),
    ).toEqual([]);
    expect(writer.acked.length).toBeGreaterThan(100);
  });
});
