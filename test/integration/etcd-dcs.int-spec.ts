import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { setTimeout as sleep } from 'node:timers/promises';
import { lastValueFrom, Subscription } from 'rxjs';
import { systemClock } from '../../src/common/clock';
import { DcsChange } from '../../src/dcs/dcs.port';
import { EtcdClient, WatchBrokenError } from '../../src/dcs/etcd/etcd-client';
import { DcsBudget, withinDcsBudget } from '../../src/dcs/dcs-budget';
import { EtcdDcs } from '../../src/dcs/etcd-dcs';
import { DcsContractFixture, describeDcsContract } from '../contracts/dcs.contract';
import { startDelayProxy } from '../helpers/delay-proxy';
import { EtcdHandle, startEtcd } from '../helpers/etcd';
import { freePort } from '../helpers/ports';
import { waitFor } from '../helpers/wait-for';
import { etcdLoad, scrapeEtcd } from '../../bench/lib/etcd-metrics';

// Worst case of the slowest tests, every wait and DCS call running into its own deadline: the etcd
// restart test (5 s watch live + restart up to 10 s + 5 s resync + 5 s) and the unreachable
// contract test (1 s + 5 s guard + 10 s recovery + 1 s), plus close() revoking leases for 1 s.
jest.setTimeout(60_000);

const RETRY_TIMEOUT_MS = 1000;
/** The contract's lease TTL for tests that wait it out in real time (etcd here allows down to 1 s). */
const SHORT_TTL_SECONDS = 2;
/** etcd's lessor checks for expired leases every 500 ms; the rest is slack for a loaded machine. */
const EXPIRY_LATENESS_MS = 3000;

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

// Both ways to etcd pass the same contract: its JSON gateway, and gRPC (used with a client certificate and a user).
describe.each(['gateway', 'grpc'] as const)(`${EtcdDcs.name} against etcd through its %s`, (transport) => {
  let etcd: EtcdHandle;
  let raw: EtcdClient;
  let scopeCounter = 0;

  beforeAll(async () => {
    etcd = await startEtcd();
    raw = new EtcdClient({ hosts: [etcd.endpoint], transport });
  });
  afterAll(async () => {
    raw.close();
    await etcd.stop();
  });

  const newNode = (
    scope: string,
    name: string,
    options: { ttlSeconds?: number; hosts?: string[]; cacheConfirmTtls?: number } = {},
  ) =>
    new EtcdDcs({
      cacheConfirmTtls: options.cacheConfirmTtls,
      hosts: options.hosts ?? [etcd.endpoint],
      namespace: '/service',
      scope,
      name,
      ttlSeconds: options.ttlSeconds ?? 30,
      retryTimeoutMs: RETRY_TIMEOUT_MS,
      clock: systemClock,
      transport,
    });

  /** A cluster of its own per test in the one etcd, on real time. */
  describeDcsContract(EtcdDcs.name, () => {
    const scope = `cluster${++scopeCounter}`;
    const opened: EtcdDcs[] = [];
    return {
      scope,
      clock: systemClock,
      shortTtlSeconds: SHORT_TTL_SECONDS,
      expiryLatenessMs: EXPIRY_LATENESS_MS,
      callDeadlineMs: RETRY_TIMEOUT_MS,
      node(name, ttlSeconds) {
        const dcs = newNode(scope, name, { ttlSeconds });
        opened.push(dcs);
        return dcs;
      },
      async putRaw(key, value) {
        await raw.put(key, value, {}, 1000);
      },
      async getRaw(key) {
        const kv = (await raw.range(key, {}, 1000)).kvs[0];
        return kv ? { value: kv.value, lease: kv.lease === '0' ? null : kv.lease } : null;
      },
      // Real time has to pass here (a lease kept alive across its ttl); there is nothing to poll for.
      passTime: (ms) => sleep(ms),
      passTimeUntil: (condition, description) =>
        waitFor(condition, { timeoutMs: SHORT_TTL_SECONDS * 1000 + EXPIRY_LATENESS_MS + 2000, description }),
      // SIGSTOP: etcd keeps its sockets open and answers nothing. A full GC while the calls wait must
      // not cost them their deadlines (AbortSignal.timeout() inside AbortSignal.any() is collected
      // with its timer: nodejs/node#57736), so one runs 100 ms into the freeze.
      async cutOff() {
        await etcd.pause();
        const gc = setTimeout(collectGarbage, 100);
        return async () => {
          clearTimeout(gc);
          etcd.resume();
        };
      },
      async dispose() {
        await Promise.all(opened.splice(0).map((dcs) => dcs.close()));
      },
    } satisfies DcsContractFixture;
  });

  describe('etcd specifics', () => {
    let scope: string;
    const opened: EtcdDcs[] = [];
    const subscriptions: Subscription[] = [];

    const node = (name: string, options: { hosts?: string[] } = {}) => {
      const dcs = newNode(scope, name, options);
      opened.push(dcs);
      return dcs;
    };
    /** Collects a node's changes; resolves once the watch is live (first resync). */
    const recordChanges = async (dcs: EtcdDcs) => {
      const changes: DcsChange[] = [];
      subscriptions.push(dcs.changes().subscribe((change) => changes.push(change)));
      await waitFor(() => changes.length > 0, { description: 'the watch to be live' });
      return changes;
    };

    beforeEach(() => {
      scope = `cluster${++scopeCounter}`;
    });
    afterEach(async () => {
      subscriptions.splice(0).forEach((subscription) => subscription.unsubscribe());
      await Promise.all(opened.splice(0).map((dcs) => dcs.close()));
    });

    it('uses the next host when the first refuses connections', async () => {
      const dcs = node('node1', { hosts: [`127.0.0.1:${await freePort()}`, etcd.endpoint] });
      expect(await dcs.acquireLeader()).not.toBeNull();
      expect((await dcs.read()).leader?.value).toBe('node1');
    });

    it('reports a watch from a compacted revision as broken, with the compaction revision', async () => {
      await raw.put(`/service/${scope}/config`, '{}', {}, 1000);
      const { revision } = await raw.put(`/service/${scope}/config`, '{"ttl":30}', {}, 1000);
      const compaction = await fetch(`http://${etcd.endpoint}/v3/kv/compaction`, {
        method: 'POST',
        body: JSON.stringify({ revision }),
      });
      expect(compaction.ok).toBe(true);
      const broken = await lastValueFrom(
        raw.watch(`/service/${scope}/`, { prefix: true, startRevision: '1' }, 1000),
      ).catch((error: unknown) => error);
      expect(broken).toBeInstanceOf(WatchBrokenError);
      expect(broken).toMatchObject({ compactRevision: revision });
    });

    const member = (name: string) => ({
      conn_url: `postgres://${name}`,
      api_url: `http://${name}`,
      state: 'running',
      role: 'replica',
      version: '3.0.2',
    });

    it("answers readCached from its watch: another node's change is there once announced, and etcd frozen within a ttl of the last read is not asked", async () => {
      const node1 = node('node1');
      const node2 = node('node2');
      const changes = await recordChanges(node2);
      await node1.acquireLeader();
      await waitFor(() => changes.some((change) => change.key === 'leader'), {
        description: 'the leader key announced',
      });
      await etcd.pause();
      try {
        const startedAt = performance.now();
        const view = await node2.readCached();
        expect(view.leader?.value).toBe('node1');
        expect(performance.now() - startedAt).toBeLessThan(RETRY_TIMEOUT_MS / 2);
        await expect(node2.read()).rejects.toThrow(/read cluster/);
      } finally {
        etcd.resume();
      }
    });

    it('drops both keys of a revoked lease from readCached: the leader key and the member key go in one transaction', async () => {
      const node1 = node('node1');
      const node2 = node('node2');
      await node1.touchMember(member('node1'));
      await node1.acquireLeader();
      const changes = await recordChanges(node2);
      await waitFor(async () => (await node2.readCached()).leader?.value === 'node1', {
        description: 'the leader in the cache',
      });
      await node1.close();
      await waitFor(() => changes.some((change) => change.key === 'members/node1' && change.type === 'delete'), {
        description: 'the revoke announced',
      });
      const view = await node2.readCached();
      expect(view.leader).toBeNull();
      expect(view.members.map((m) => m.name)).toEqual([]);
    });

    it('stops answering readCached from the watch once a request fails: it asks etcd, and fails while etcd is frozen, until the watch is back', async () => {
      const node2 = node('node2');
      await recordChanges(node2);
      expect((await node2.readCached()).leader).toBeNull();
      await etcd.pause();
      try {
        await expect(node2.touchMember(member('node2'))).rejects.toThrow(/write member key/);
        await expect(node2.readCached()).rejects.toThrow(/read cluster/);
      } finally {
        etcd.resume();
      }
      await node('node1').acquireLeader();
      await waitFor(async () => (await node2.readCached()).leader?.value === 'node1', {
        description: 'readCached after the thaw',
      });
    });

    it("keeps answering readCached from the watch when a request was cut short by its cycle's budget: a slow etcd is not a lost one", async () => {
      const node2 = node('node2');
      await recordChanges(node2);
      expect((await node2.readCached()).leader).toBeNull();
      await etcd.pause();
      try {
        // What a cycle has left after its earlier calls: a tenth of retry_timeout, too short to count as etcd gone.
        await withinDcsBudget(new DcsBudget(RETRY_TIMEOUT_MS / 10), async () => {
          await expect(node2.touchMember(member('node2'))).rejects.toThrow(/write member key/);
        });
        const startedAt = performance.now();
        expect((await node2.readCached()).leader).toBeNull();
        expect(performance.now() - startedAt).toBeLessThan(RETRY_TIMEOUT_MS / 2); // from the cache, not from etcd
      } finally {
        etcd.resume();
      }
    });

    it("refuses at once what is left of a cycle too short for etcd's last answer, rather than sending it to be aborted", async () => {
      const proxy = await startDelayProxy(etcd.endpoint);
      try {
        const node1 = node('node1', { hosts: [proxy.endpoint] });
        await node1.read(); // connected before the link slows down (gRPC's handshake alone takes two round trips)
        proxy.delayMs = 0.3 * RETRY_TIMEOUT_MS; // each way: every answer takes 60% of a retry_timeout or more
        await withinDcsBudget(new DcsBudget(RETRY_TIMEOUT_MS), async () => {
          await node1.read(); // the cycle's first call goes, and leaves less than half its budget
          const refusedAt = performance.now();
          await expect(node1.touchMember(member('node1'))).rejects.toThrow(
            /write member key: not sent, \d+ ms left of this HA cycle's retry_timeout and etcd's last answer took \d+ ms/,
          );
          expect(performance.now() - refusedAt).toBeLessThan(RETRY_TIMEOUT_MS / 10);
          // A call the cycle cannot do without (the read, the lock) still tries what is left: etcd may be fast again.
          await expect(node1.read()).rejects.toThrow(
            /read cluster: failed within \d+ ms: etcd \/v3\/kv\/range: no answer/,
          );
        });
        // The link is fast again: the next cycle's first call goes whatever the estimate says, and is answered.
        proxy.delayMs = 0;
        await withinDcsBudget(new DcsBudget(RETRY_TIMEOUT_MS), () => node1.touchMember(member('node1')));
        expect((await node1.read()).members.map((m) => m.name)).toEqual(['node1']);
      } finally {
        await proxy.close();
      }
    });

    it("a lock holder's keepalive started with its cycle goes out beside the cycle's read: the lock counts from before the read, and the refresh ends one etcd answer sooner", async () => {
      const proxy = await startDelayProxy(etcd.endpoint);
      try {
        const node1 = node('node1', { hosts: [proxy.endpoint] });
        await node1.touchMember(member('node1'));
        expect(await node1.acquireLeader()).not.toBeNull();
        proxy.delayMs = 0.2 * RETRY_TIMEOUT_MS; // each way: every answer takes 40% of a retry_timeout
        const answerMs = 2 * proxy.delayMs;
        const cycle = (startEarly: boolean) =>
          withinDcsBudget(new DcsBudget(RETRY_TIMEOUT_MS), async () => {
            const startedAt = systemClock.monotonic();
            if (startEarly) node1.startLeaderRefresh();
            await node1.read();
            const lock = await node1.refreshLeader();
            return {
              lockCountsFromMs: lock!.validUntil - 30_000 - startedAt,
              tookMs: systemClock.monotonic() - startedAt,
            };
          });
        const sentAfterTheRead = await cycle(false);
        expect(sentAfterTheRead.lockCountsFromMs).toBeGreaterThanOrEqual(answerMs);
        const sentWithTheRead = await cycle(true);
        expect(sentWithTheRead.lockCountsFromMs).toBeLessThan(answerMs / 4);
        expect(sentWithTheRead.tookMs).toBeLessThan(sentAfterTheRead.tookMs - answerMs / 2);
      } finally {
        await proxy.close();
      }
    });

    it("an idle leader's cycle on the watch's cache costs etcd one keepalive: no range, no compare, no write of an unchanged member key", async () => {
      const node1 = node('node1');
      await node1.touchMember(member('node1'));
      expect(await node1.acquireLeader()).not.toBeNull();
      await recordChanges(node1);
      await waitFor(async () => (await node1.readCached()).leader?.value === 'node1', {
        description: 'the leader in the cache',
      });
      const before = await scrapeEtcd([etcd.endpoint]);
      const cycles = 3;
      for (let cycle = 0; cycle < cycles; cycle++) {
        expect((await node1.readCached()).leader?.value).toBe('node1');
        expect(await node1.refreshLeader()).not.toBeNull();
        await node1.touchMember(member('node1'));
      }
      const load = etcdLoad(before, await scrapeEtcd([etcd.endpoint]));
      const sent: Record<string, number> = {};
      for (const [kind, perSecond] of Object.entries(load.requestsPerSecond)) {
        const count = Math.round(perSecond * load.seconds);
        if (count > 0) sent[kind] = count;
      }
      expect(sent).toEqual({ LeaseKeepAlive: cycles });
    });

    it('confirms an aged, unchanged cache with two small ranges (keys-only since its revision, count-only of all), fewer bytes than a read', async () => {
      const node1 = node('node1');
      await node1.touchMember(member('node1'));
      expect(await node1.acquireLeader()).not.toBeNull();
      // 0.02 ttls of 30 s: the cache needs confirming 600 ms after its last confirmation.
      const node2 = newNode(scope, 'node2', { cacheConfirmTtls: 0.02 });
      opened.push(node2);
      await recordChanges(node2);
      await node2.read();
      const sentDuring = async (work: () => Promise<void>) => {
        const agedAt = performance.now() + 700;
        await waitFor(() => performance.now() > agedAt, { description: 'the confirmation to age' });
        const before = await scrapeEtcd([etcd.endpoint]);
        await work();
        const load = etcdLoad(before, await scrapeEtcd([etcd.endpoint]));
        const sent: Record<string, number> = {};
        for (const [kind, perSecond] of Object.entries(load.requestsPerSecond)) {
          const count = Math.round(perSecond * load.seconds);
          if (count > 0) sent[kind] = count;
        }
        return { sent, bytesOut: load.bytesOutPerSecond * load.seconds };
      };
      const unchanged = await sentDuring(async () => {
        expect((await node2.readCached()).leader?.value).toBe('node1');
        // Confirmed: the next call within the bound asks etcd nothing.
        expect((await node2.readCached()).members.map((m) => m.name)).toEqual(['node1']);
      });
      expect(unchanged.sent).toEqual({ Range: 2 });
      const full = await sentDuring(async () => {
        expect((await node2.read()).leader?.value).toBe('node1');
      });
      expect(full.sent).toEqual({ Range: 1 });
      expect(unchanged.bytesOut).toBeLessThan(full.bytesOut);
    });

    it('gives up a write within the retry_timeout set last (the dynamic configuration changed it), not the one it started with', async () => {
      const node1 = node('node1');
      node1.setRetryTimeout(500);
      await etcd.pause();
      const started = performance.now();
      try {
        await expect(node1.setStatus({ optime: 1 })).rejects.toThrow(/write status: failed within 500 ms/);
      } finally {
        etcd.resume();
      }
      expect(performance.now() - started).toBeLessThan(RETRY_TIMEOUT_MS);
    });

    it('asks etcd again once the last read is `cacheConfirmTtls` ttls old, even with its watch live', async () => {
      // The default is 10 ttls (5 minutes at ttl 30); one here, to wait 2 s, not 20.
      const node2 = newNode(scope, 'node2', { ttlSeconds: SHORT_TTL_SECONDS, cacheConfirmTtls: 1 });
      opened.push(node2);
      await recordChanges(node2);
      await sleep(SHORT_TTL_SECONDS * 1000 + 100);
      await etcd.pause();
      try {
        // A live watch's cache is confirmed by two small ranges (ClusterWatch.confirmUnchanged) rather than a read.
        await expect(node2.readCached()).rejects.toThrow(/confirm cluster cache/);
      } finally {
        etcd.resume();
      }
    });

    it("with etcd frozen, one HA cycle's calls wait one retry_timeout together: the first waits it out, the next are refused at once", async () => {
      const node1 = node('node1');
      expect(await node1.acquireLeader()).not.toBeNull();
      // As after a PATCH of retry_timeout: each call alone may now wait 2 s; the cycle's budget is 1.5 s.
      node1.setRetryTimeout(2 * RETRY_TIMEOUT_MS);
      const cycleBudgetMs = 1.5 * RETRY_TIMEOUT_MS;
      await etcd.pause();
      try {
        const cycleStartedAt = performance.now();
        await withinDcsBudget(new DcsBudget(cycleBudgetMs), async () => {
          await expect(node1.read()).rejects.toThrow(`read cluster: failed within ${cycleBudgetMs} ms`);
          await expect(node1.refreshLeader()).rejects.toThrow(
            `refresh leader lock: not sent, this HA cycle already waited its retry_timeout (${cycleBudgetMs} ms)`,
          );
          await expect(node1.touchMember(member('node1'))).rejects.toThrow(/write member key: not sent/);
        });
        const cycleMs = performance.now() - cycleStartedAt;
        expect(cycleMs).toBeGreaterThanOrEqual(cycleBudgetMs - 50);
        expect(cycleMs).toBeLessThan(cycleBudgetMs + 500);
        // Outside a cycle (an API request, a background task) a call has the changed retry_timeout of its own.
        const callStartedAt = performance.now();
        await expect(node1.read()).rejects.toThrow(`read cluster: failed within ${2 * RETRY_TIMEOUT_MS} ms`);
        expect(performance.now() - callStartedAt).toBeGreaterThanOrEqual(2 * RETRY_TIMEOUT_MS - 50);
      } finally {
        etcd.resume();
      }
    });

    it('re-establishes the watch after an etcd restart and asks for a re-read', async () => {
      const node1 = node('node1');
      const changes = await recordChanges(node('node2'));
      await etcd.restart();
      await waitFor(() => changes.filter((change) => change.type === 'resync').length === 2, {
        timeoutMs: 5000,
        description: 'a resync after the restart',
      });
      await node1.acquireLeader();
      await waitFor(() => changes.some((change) => change.key === 'leader' && change.type === 'put'), {
        description: 'a change made after the restart',
      });
    });
  });
});
