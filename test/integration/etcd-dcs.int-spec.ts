import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { setTimeout as sleep } from 'node:timers/promises';
import { lastValueFrom, Subscription } from 'rxjs';
import { systemClock } from '../../src/common/clock';
import { DcsChange, DcsError, MemberData } from '../../src/dcs/dcs.port';
import { EtcdClient, WatchBrokenError } from '../../src/dcs/etcd/etcd-client';
import { EtcdDcs } from '../../src/dcs/etcd-dcs';
import { EtcdHandle, startEtcd } from '../helpers/etcd';
import { freePort } from '../helpers/ports';
import { waitFor } from '../helpers/wait-for';

// Worst case of the slowest tests, every wait and DCS call running into its own deadline: the etcd
// restart test (5 s watch live + restart up to 10 s + 5 s resync + 1 s + 5 s) and the frozen test
// (1 s + 1 s frozen, 5 s guard + 10 s recovery + 1 s), plus close() revoking leases for 1 s.
jest.setTimeout(60_000);

const RETRY_TIMEOUT_MS = 1000;

/**
 * A full (major) garbage collection, as happens at random moments in a long test run. jest does
 * not run with --expose-gc, so the flag is set for just long enough to fetch `gc` from a new context.
 */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  setFlagsFromString('--no-expose-gc');
  gc();
}

/** Promise.allSettled, or an error once `timeoutMs` has passed with calls still pending. */
async function allSettledWithin(calls: Promise<unknown>[], timeoutMs: number): Promise<PromiseSettledResult<unknown>[]> {
  let timer: NodeJS.Timeout | undefined;
  const guard = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`calls still pending ${timeoutMs} ms after they started`)), timeoutMs);
  });
  try {
    return await Promise.race([Promise.allSettled(calls), guard]);
  } finally {
    clearTimeout(timer);
  }
}

const member = (state: string): MemberData => ({
  conn_url: 'postgres://127.0.0.1:5432/postgres',
  api_url: 'http://127.0.0.1:8008/patroni',
  state,
  role: 'replica',
  version: '4.0.0',
});

describe(`${EtcdDcs.name} against etcd`, () => {
  let etcd: EtcdHandle;
  let raw: EtcdClient;
  let scope: string;
  let scopeCounter = 0;
  const opened: EtcdDcs[] = [];
  const subscriptions: Subscription[] = [];

  const node = (name: string, options: { ttlSeconds?: number; hosts?: string[] } = {}) => {
    const dcs = new EtcdDcs({
      hosts: options.hosts ?? [etcd.endpoint],
      namespace: '/service',
      scope,
      name,
      ttlSeconds: options.ttlSeconds ?? 30,
      retryTimeoutMs: RETRY_TIMEOUT_MS,
      clock: systemClock,
    });
    opened.push(dcs);
    return dcs;
  };
  /** Collects a node's changes; resolves once the watch is live (first resync). */
  const recordChanges = async (dcs: EtcdDcs) => {
    const changes: { change: DcsChange; at: number }[] = [];
    subscriptions.push(dcs.changes().subscribe((change) => changes.push({ change, at: performance.now() })));
    await waitFor(() => changes.length > 0, { description: 'the watch to be live' });
    return changes;
  };

  beforeAll(async () => {
    etcd = await startEtcd();
    raw = new EtcdClient({ hosts: [etcd.endpoint] });
  });
  afterAll(async () => {
    raw.close();
    await etcd.stop();
  });
  beforeEach(() => {
    scope = `cluster${++scopeCounter}`;
  });
  afterEach(async () => {
    subscriptions.splice(0).forEach((subscription) => subscription.unsubscribe());
    await Promise.all(opened.splice(0).map((dcs) => dcs.close()));
  });

  it('gives the leader lock to exactly one of two racing nodes, in Patroni key layout', async () => {
    const [lock1, lock2] = await Promise.all([node('node1').acquireLeader(), node('node2').acquireLeader()]);
    expect([lock1, lock2].filter((lock) => lock !== null)).toHaveLength(1);
    const winner = lock1 ? 'node1' : 'node2';
    const leaderKey = await raw.range(`/service/${scope}/leader`, {}, 1000);
    expect(leaderKey.kvs[0].value).toBe(winner);
    expect(leaderKey.kvs[0].lease).not.toBe('0');
  });

  it('refreshes the lock with validUntil counted from before the keepalive, and releases it', async () => {
    const node1 = node('node1');
    const node2 = node('node2');
    await node1.acquireLeader();
    const before = Date.now();
    const refreshed = await node1.refreshLeader();
    expect(refreshed!.validUntil).toBeGreaterThanOrEqual(before + 30_000);
    expect(refreshed!.validUntil).toBeLessThanOrEqual(Date.now() + 30_000);
    expect(await node2.refreshLeader()).toBeNull();
    expect(await node2.releaseLeader()).toBe(false);
    expect(await node1.releaseLeader()).toBe(true);
    expect(await node1.refreshLeader()).toBeNull();
    expect((await node2.read()).leader).toBeNull();
    expect(await node2.acquireLeader()).not.toBeNull();
  });

  it('loses leader and member keys when the lease is not kept alive for ttl', async () => {
    const node1 = node('node1', { ttlSeconds: 2 });
    const node2 = node('node2');
    await node1.touchMember(member('running'));
    const acquiredAt = performance.now();
    await node1.acquireLeader();
    expect((await node2.read()).members.map((m) => m.name)).toEqual(['node1']);

    await waitFor(async () => (await node2.read()).leader === null, { timeoutMs: 5000, description: 'the leader key to expire' });
    expect(performance.now() - acquiredAt).toBeGreaterThan(1500);
    expect((await node2.read()).members).toEqual([]);
    expect(await node2.acquireLeader()).not.toBeNull();
    expect(await node1.refreshLeader()).toBeNull(); // lease re-granted, but the lock is node2's now
    await node1.touchMember(member('running')); // the member key comes back on the new lease
    expect((await node2.read()).members.map((m) => m.name)).toEqual(['node1']);
  });

  it('skips identical member writes and rewrites on change', async () => {
    const node1 = node('node1');
    await node1.touchMember(member('running'));
    const first = (await node1.read()).members[0].modRevision;
    await node1.touchMember(member('running'));
    expect((await node1.read()).members[0].modRevision).toBe(first);
    await node1.touchMember(member('stopped'));
    expect((await node1.read()).members[0]).toMatchObject({ data: { state: 'stopped' } });
  });

  it('applies config and failover writes only at the expected revision', async () => {
    const node1 = node('node1');
    const node2 = node('node2');
    expect(await node1.setConfig({ ttl: 30, loop_wait: 10 }, 'absent')).toBe(true);
    expect(await node2.setConfig({ ttl: 99 }, 'absent')).toBe(false);
    const { config } = await node2.read();
    expect(await node1.setConfig({ ttl: 20 }, config!.modRevision)).toBe(true);
    expect(await node2.setConfig({ ttl: 40 }, config!.modRevision)).toBe(false);
    expect((await node2.read()).config?.value).toEqual({ ttl: 20 });

    await node1.setFailover({ leader: 'node1', member: 'node2' });
    const { failover } = await node1.read();
    expect(await node2.setFailover({}, failover!.modRevision)).toBe(true);
    expect((await node1.read()).failover?.value).toEqual({});

    expect(await node1.initialize('', true)).toBe(true);
    expect(await node2.initialize('', true)).toBe(false);
  });

  it('reads values written by other tools without throwing', async () => {
    await raw.put(`/service/${scope}/config`, '{broken', {}, 1000);
    await raw.put(`/service/${scope}/history`, '[[1,25165984,"no recovery target specified"]]', {}, 1000);
    await raw.put(`/service/${scope}/members/odd`, 'not json', {}, 1000);
    await raw.put(`/service/${scope}/failover`, 'node1:node2', {}, 1000);
    const view = await node('node1').read();
    expect(view.config?.value).toEqual({});
    expect(view.history?.value).toEqual([[1, 25_165_984, 'no recovery target specified']]);
    expect(view.members).toEqual([]);
    expect(view.failover?.value).toEqual({ leader: 'node1', member: 'node2' });
  });

  it('reports a leader delete through the watch within 1 s, with keys relative to the cluster', async () => {
    const node1 = node('node1');
    const changes = await recordChanges(node('node2'));
    await node1.acquireLeader();
    await node1.releaseLeader();
    const releasedAt = performance.now();
    const deleted = await waitFor(() => changes.find(({ change }) => change.key === 'leader' && change.type === 'delete'), {
      description: 'the leader delete on the watch',
    });
    expect(deleted.at - releasedAt).toBeLessThan(1000);
    expect(changes.map(({ change }) => change)).toEqual([
      { key: null, type: 'resync' },
      { key: 'leader', type: 'put' },
      { key: 'leader', type: 'delete' },
    ]);
  });

  it('revokes its lease on close: leader and member vanish at once', async () => {
    const node1 = node('node1');
    await node1.touchMember(member('running'));
    await node1.acquireLeader();
    await node1.close();
    const view = await node('node2').read();
    expect(view.leader).toBeNull();
    expect(view.members).toEqual([]);
    await expect(node1.read()).rejects.toBeInstanceOf(DcsError);
  });

  it('uses the next host when the first refuses connections', async () => {
    const dcs = node('node1', { hosts: [`127.0.0.1:${await freePort()}`, etcd.endpoint] });
    expect(await dcs.acquireLeader()).not.toBeNull();
    expect((await dcs.read()).leader?.value).toBe('node1');
  });

  it('rejects every call within retryTimeout while etcd is frozen, and works again after it resumes', async () => {
    const node1 = node('node1');
    await node1.acquireLeader();
    etcd.pause();
    try {
      const started = performance.now();
      // No release here: a timed-out request can still be applied once etcd resumes.
      const calls = [
        node1.read(),
        node1.refreshLeader(),
        node1.acquireLeader(),
        node1.touchMember(member('running')),
        node1.setConfig({ ttl: 30 }),
        node1.setStatus({ optime: 1 }),
      ];
      // A GC while the requests wait must not cost them their deadlines (AbortSignal.timeout()
      // inside AbortSignal.any() is collected with its timer: nodejs/node#57736).
      await sleep(100);
      collectGarbage();
      // The guard only keeps a hang from holding etcd frozen (and this test) until jest's timeout.
      const outcomes = await allSettledWithin(calls, RETRY_TIMEOUT_MS + 5000);
      const elapsed = performance.now() - started;
      expect(outcomes.map((outcome) => outcome.status)).toEqual(calls.map(() => 'rejected'));
      for (const outcome of outcomes) expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(DcsError);
      expect(elapsed).toBeLessThan(RETRY_TIMEOUT_MS + 300);
    } finally {
      etcd.resume();
    }
    // After SIGCONT etcd first works through the requests that piled up while it was stopped;
    // under CPU load that can take longer than one call's retryTimeout.
    const lock = await waitFor(() => node1.refreshLeader().then((refreshed) => ({ refreshed })), {
      timeoutMs: 10_000,
      description: 'refreshLeader to answer after etcd resumed',
    });
    expect(lock.refreshed).not.toBeNull();
    expect((await node1.read()).leader?.value).toBe('node1');
  });

  it('reports a watch from a compacted revision as broken, with the compaction revision', async () => {
    await raw.put(`/service/${scope}/config`, '{}', {}, 1000);
    const { revision } = await raw.put(`/service/${scope}/config`, '{"ttl":30}', {}, 1000);
    const compaction = await fetch(`http://${etcd.endpoint}/v3/kv/compaction`, {
      method: 'POST',
      body: JSON.stringify({ revision }),
    });
    expect(compaction.ok).toBe(true);
    const broken = await lastValueFrom(raw.watch(`/service/${scope}/`, { prefix: true, startRevision: '1' }, 1000)).catch(
      (error: unknown) => error,
    );
    expect(broken).toBeInstanceOf(WatchBrokenError);
    expect(broken).toMatchObject({ compactRevision: revision });
  });

  it('re-establishes the watch after an etcd restart and asks for a re-read', async () => {
    const node1 = node('node1');
    const changes = await recordChanges(node('node2'));
    await etcd.restart();
    await waitFor(() => changes.filter(({ change }) => change.type === 'resync').length === 2, {
      timeoutMs: 5000,
      description: 'a resync after the restart',
    });
    await node1.acquireLeader();
    await waitFor(() => changes.some(({ change }) => change.key === 'leader' && change.type === 'put'), {
      description: 'a change made after the restart',
    });
  });
});
