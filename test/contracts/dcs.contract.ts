import { Subscription } from 'rxjs';
import { TimerClock } from '../../src/common/clock';
import { Dcs, DcsChange, DcsError, MemberData } from '../../src/dcs/dcs.port';
import { waitFor } from '../helpers/wait-for';

/**
 * What an adapter's spec hands the Dcs contract: nodes of a fresh cluster for each test, raw access
 * to the store as another tool sees it, and control over the time its leases count on.
 */
export interface DcsContractFixture {
  /** The cluster of this test (fresh per fixture); nodes and raw keys live under `/service/<scope>/`. */
  readonly scope: string;
  /** The clock the nodes' `validUntil` and lease expiry are measured on: its monotonic reading. */
  readonly clock: TimerClock;
  /** A TTL that tests wait out: any value on a manual clock, a short one in real time. */
  readonly shortTtlSeconds: number;
  /** How long after `validUntil` an unrefreshed lease may still be visible (0 on a manual clock). */
  readonly expiryLatenessMs: number;
  /** How long a call may take to reject while the store is unreachable (the adapter's retry_timeout). */
  readonly callDeadlineMs: number;
  /** A node of this test's cluster in namespace `/service`; the fixture closes it in `dispose`. */
  node(name: string, ttlSeconds: number): Dcs;
  /** Writes `value` at a full key without a lease, as another tool would. */
  putRaw(key: string, value: string): Promise<void>;
  /** The stored value of a full key and its lease id (null when it has none), or null when absent. */
  getRaw(key: string): Promise<{ value: string; lease: string | null } | null>;
  /** Lets `ms` pass on `clock`; leases that run out on the way take their keys with them. */
  passTime(ms: number): Promise<void>;
  /** Lets time pass until `condition` holds (lease expiry applied on the way) and returns its value. */
  passTimeUntil<T>(condition: () => T | Promise<T>, description: string): Promise<NonNullable<T>>;
  /** Makes the store unreachable for every node; resolves to the function that makes it reachable again. */
  cutOff(): Promise<() => Promise<void>>;
  /** Closes every node this fixture opened. */
  dispose(): Promise<void>;
}

const TTL_SECONDS = 30;

const member = (state: string): MemberData => ({
  conn_url: 'postgres://127.0.0.1:5432/postgres',
  api_url: 'http://127.0.0.1:8008/patroni',
  state,
  role: 'replica',
  version: '4.0.0',
});

/** Promise.allSettled, or an error once `timeoutMs` has passed with calls still pending. */
async function allSettledWithin(
  calls: Promise<unknown>[],
  timeoutMs: number,
): Promise<PromiseSettledResult<unknown>[]> {
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

/**
 * The behaviours of the Dcs port (src/dcs/dcs.port.ts) every adapter must show, written once.
 * An adapter's spec calls this with a fixture factory; `makeFixture` runs before each test.
 */
export function describeDcsContract(
  adapter: string,
  makeFixture: () => DcsContractFixture | Promise<DcsContractFixture>,
): void {
  describe(`the Dcs contract on ${adapter}`, () => {
    let fixture: DcsContractFixture;
    const subscriptions: Subscription[] = [];

    const node = (name: string, ttlSeconds = TTL_SECONDS) => fixture.node(name, ttlSeconds);
    const key = (relative: string) => `/service/${fixture.scope}/${relative}`;
    /** Collects a node's changes with the time each arrived; resolves once the watch is live (first resync). */
    const recordChanges = async (dcs: Dcs) => {
      const changes: { change: DcsChange; at: number }[] = [];
      subscriptions.push(dcs.changes().subscribe((change) => changes.push({ change, at: performance.now() })));
      await waitFor(() => changes.length > 0, { description: 'the watch to be live' });
      return changes;
    };
    /** validUntil must count from a moment between `before` and the answer, ttl ahead. */
    const expectValidUntil = (lock: { validUntil: number } | null, before: number, ttlSeconds: number) => {
      expect(lock!.validUntil).toBeGreaterThanOrEqual(before + ttlSeconds * 1000);
      expect(lock!.validUntil).toBeLessThanOrEqual(fixture.clock.monotonic() + ttlSeconds * 1000);
    };

    beforeEach(async () => {
      fixture = await makeFixture();
    });
    afterEach(async () => {
      subscriptions.splice(0).forEach((subscription) => subscription.unsubscribe());
      await fixture.dispose();
    });

    describe('leader lock', () => {
      it('goes to exactly one of two racing nodes; the other gets null and reads the winner', async () => {
        const node1 = node('node1');
        const node2 = node('node2');
        const before = fixture.clock.monotonic();
        const [lock1, lock2] = await Promise.all([node1.acquireLeader(), node2.acquireLeader()]);
        expect([lock1, lock2].filter((lock) => lock !== null)).toHaveLength(1);
        const [winner, loser] = lock1 ? ['node1', node2] : ['node2', node1];
        expectValidUntil(lock1 ?? lock2, before, TTL_SECONDS);
        expect(await loser.acquireLeader()).toBeNull();
        expect((await loser.read()).leader?.value).toBe(winner);
      });

      it('is stored as the plain member name under /<namespace>/<scope>/leader, on a lease', async () => {
        await node('node1').acquireLeader();
        const stored = await fixture.getRaw(`/service/${fixture.scope}/leader`);
        expect(stored?.value).toBe('node1');
        expect(stored?.lease).not.toBeNull();
      });

      it('refresh counts validUntil from the time of the refresh', async () => {
        const node1 = node('node1');
        await node1.acquireLeader();
        await fixture.passTime((fixture.shortTtlSeconds * 1000) / 3);
        const before = fixture.clock.monotonic();
        expectValidUntil(await node1.refreshLeader(), before, TTL_SECONDS);
      });

      it('refresh returns null for a non-holder and when the key is gone, without re-creating it', async () => {
        const node1 = node('node1');
        const node2 = node('node2');
        await node1.acquireLeader();
        expect(await node2.refreshLeader()).toBeNull();
        await node1.releaseLeader();
        expect(await node1.refreshLeader()).toBeNull();
        expect((await node2.read()).leader).toBeNull();
      });

      it('after a release, a refresh does not hold the key again on the strength of a read before it', async () => {
        const node1 = node('node1');
        await node1.acquireLeader();
        // The HA cycle's read (or the watch's cache) still showed our name when the switchover released the key.
        await node1.read();
        await node1.readCached();
        expect(await node1.releaseLeader()).toBe(true);
        expect(await node1.refreshLeader()).toBeNull();
        expect((await node('node2').read()).leader).toBeNull();
        // Taken again, the key is refreshed as before.
        expect(await node1.acquireLeader()).not.toBeNull();
        await node1.read();
        expect(await node1.refreshLeader()).not.toBeNull();
      });

      it('release deletes the key only for the holder; then another node can take it', async () => {
        const node1 = node('node1');
        const node2 = node('node2');
        await node1.acquireLeader();
        expect(await node2.releaseLeader()).toBe(false);
        expect((await node2.read()).leader?.value).toBe('node1');
        expect(await node1.releaseLeader()).toBe(true);
        expect(await node2.acquireLeader()).not.toBeNull();
      });

      it('forceLeader overwrites whoever holds the key', async () => {
        const node1 = node('node1');
        await node1.acquireLeader();
        await node('node2').forceLeader();
        expect((await node1.read()).leader?.value).toBe('node2');
        expect(await node1.refreshLeader()).toBeNull();
      });
    });

    describe('lease', () => {
      it('expires ttl after the last keepalive, not before validUntil, taking the leader and member keys with it', async () => {
        const node1 = node('node1', fixture.shortTtlSeconds);
        const node2 = node('node2');
        await node1.touchMember(member('running'));
        const lock = await node1.acquireLeader();
        const held = await node2.read();
        expect(held.leader?.value).toBe('node1');
        expect(held.members.map((m) => m.name)).toEqual(['node1']);

        const view = await fixture.passTimeUntil(async () => {
          const current = await node2.read();
          return current.leader === null ? current : null;
        }, 'the leader key to expire');
        expect(fixture.clock.monotonic()).toBeGreaterThanOrEqual(lock!.validUntil);
        expect(fixture.clock.monotonic()).toBeLessThanOrEqual(lock!.validUntil + fixture.expiryLatenessMs);
        expect(view.members).toEqual([]);
        expect(await node2.acquireLeader()).not.toBeNull();
      });

      it('is granted again after it was lost: refresh of the lost lock returns null, the member key comes back', async () => {
        const node1 = node('node1', fixture.shortTtlSeconds);
        const node2 = node('node2');
        await node1.acquireLeader();
        await fixture.passTimeUntil(async () => (await node2.read()).leader === null, 'the leader key to expire');
        expect(await node2.acquireLeader()).not.toBeNull();
        expect(await node1.refreshLeader()).toBeNull();
        await node1.touchMember(member('running'));
        expect((await node2.read()).members.map((m) => m.name)).toEqual(['node1']);
      });

      it('is kept alive by member touches, which keeps the leader key too (one lease per node)', async () => {
        const ttlMs = fixture.shortTtlSeconds * 1000;
        const node1 = node('node1', fixture.shortTtlSeconds);
        await node1.acquireLeader();
        for (let elapsed = 0; elapsed < 3 * ttlMs; elapsed += ttlMs / 3) {
          await fixture.passTime(ttlMs / 3);
          await node1.touchMember(member('running'));
        }
        expect((await node('node2').read()).leader?.value).toBe('node1');
      });

      it('setTtl re-grants the lease; refresh moves the leader key onto the new one', async () => {
        const newTtlSeconds = fixture.shortTtlSeconds;
        const oldTtlMs = 2 * newTtlSeconds * 1000;
        const node1 = node('node1', 2 * newTtlSeconds);
        await node1.acquireLeader();
        await node1.setTtl(newTtlSeconds);
        const before = fixture.clock.monotonic();
        expectValidUntil(await node1.refreshLeader(), before, newTtlSeconds);
        for (let elapsed = 0; elapsed <= oldTtlMs; elapsed += (newTtlSeconds * 1000) / 2) {
          await fixture.passTime((newTtlSeconds * 1000) / 2); // past the old lease's expiry: the key lives on the new one
          expect(await node1.refreshLeader()).not.toBeNull();
        }
        expect((await node('node2').read()).leader?.value).toBe('node1');
      });

      it('is revoked on close: leader and member disappear at once, and the closed node rejects calls', async () => {
        const node1 = node('node1');
        await node1.touchMember(member('running'));
        await node1.acquireLeader();
        await node1.close();
        const view = await node('node2').read();
        expect(view.leader).toBeNull();
        expect(view.members).toEqual([]);
        await expect(node1.read()).rejects.toBeInstanceOf(DcsError);
      });
      it('is left to expire on close with keepLease: the member key outlives the agent by one ttl', async () => {
        const node1 = node('node1', fixture.shortTtlSeconds);
        const node2 = node('node2');
        await node1.touchMember(member('stopped'));
        await node1.close({ keepLease: true });
        expect((await node2.read()).members.map((m) => [m.name, m.data.state])).toEqual([['node1', 'stopped']]);
        await fixture.passTimeUntil(async () => (await node2.read()).members.length === 0, 'the member key to expire');
      });

      it("renewed by a stopping leader's last touch, whatever its age: its member key lives a whole ttl after it", async () => {
        const ttlMs = fixture.shortTtlSeconds * 1000;
        const node1 = node('node1', fixture.shortTtlSeconds);
        const node2 = node('node2');
        await node1.touchMember(member('running'));
        await fixture.passTime(ttlMs / 4); // too young for a plain touch to send a keepalive
        const renewedAt = fixture.clock.monotonic();
        await node1.touchMember(member('stopped'), { renewLease: true });
        await node1.close({ keepLease: true });
        await fixture.passTimeUntil(async () => (await node2.read()).members.length === 0, 'the member key to expire');
        expect(fixture.clock.monotonic()).toBeGreaterThanOrEqual(renewedAt + ttlMs);
      });
    });

    describe('member keys', () => {
      it('lists members sorted by name with their JSON data', async () => {
        const node1 = node('node1');
        await node('node2').touchMember(member('running'));
        await node1.touchMember(member('starting'));
        const view = await node1.read();
        expect(view.members.map((m) => [m.name, m.data.state])).toEqual([
          ['node1', 'starting'],
          ['node2', 'running'],
        ]);
      });

      it('skips the write when nothing changed, and rewrites on change', async () => {
        const node1 = node('node1');
        await node1.touchMember(member('running'));
        const first = await node1.read();
        await node1.touchMember(member('running'));
        const unchanged = await node1.read();
        expect(unchanged.revision).toBe(first.revision);
        expect(unchanged.members[0].modRevision).toBe(first.members[0].modRevision);
        await node1.touchMember(member('stopped'));
        const changed = await node1.read();
        expect(changed.revision).not.toBe(first.revision);
        expect(changed.members[0]).toMatchObject({ name: 'node1', data: { state: 'stopped' } });
      });
    });

    describe('compare-and-set keys', () => {
      it('writes config only at the expected revision', async () => {
        const node1 = node('node1');
        const node2 = node('node2');
        expect(await node1.setConfig({ ttl: 30, loop_wait: 10 }, 'absent')).toBe(true);
        expect(await node2.setConfig({ ttl: 99 }, 'absent')).toBe(false);
        const { config } = await node2.read();
        expect(config?.value).toEqual({ ttl: 30, loop_wait: 10 });
        expect(await node1.setConfig({ ttl: 20 }, config!.modRevision)).toBe(true);
        expect(await node2.setConfig({ ttl: 40 }, config!.modRevision)).toBe(false);
        expect((await node2.read()).config?.value).toEqual({ ttl: 20 });
      });

      it('lets only one node win the initialize race; cancel gives it back; a plain write stores the system id', async () => {
        const node1 = node('node1');
        const node2 = node('node2');
        expect(await node1.initialize('', true)).toBe(true);
        expect(await node2.initialize('', true)).toBe(false);
        expect((await node2.read()).initialize).toBe('');
        await node1.cancelInitialization();
        expect((await node2.read()).initialize).toBeNull();
        expect(await node2.initialize('', true)).toBe(true);
        expect(await node2.initialize('7301234567890123456', false)).toBe(true);
        expect((await node1.read()).initialize).toBe('7301234567890123456');
      });

      it('writes failover with CAS, and history and status plainly', async () => {
        const node1 = node('node1');
        const node2 = node('node2');
        await node1.setFailover({ leader: 'node1', member: 'node2' });
        const { failover } = await node1.read();
        expect(failover?.value).toEqual({ leader: 'node1', member: 'node2' });
        expect(await node2.setFailover({}, failover!.modRevision)).toBe(true);
        expect(await node1.setFailover({ leader: 'node1' }, failover!.modRevision)).toBe(false);
        await node1.setHistory([[1, 25_165_984, 'no recovery target specified', '2026-01-01T00:00:00+00:00', 'node1']]);
        await node1.setStatus({ optime: 67_108_960 });
        const view = await node2.read();
        expect(view.failover?.value).toEqual({});
        expect(view.history?.value).toEqual([
          [1, 25_165_984, 'no recovery target specified', '2026-01-01T00:00:00+00:00', 'node1'],
        ]);
        expect(view.status?.value).toEqual({ optime: 67_108_960 });
      });
    });

    describe('reading values written by other tools', () => {
      it('tolerates malformed JSON and keeps the revision for a CAS over it', async () => {
        await fixture.putRaw(key('config'), '{not json');
        await fixture.putRaw(key('history'), 'nope');
        await fixture.putRaw(key('sync'), '[1,2]');
        await fixture.putRaw(key('status'), '');
        await fixture.putRaw(key('members/broken'), 'garbage');
        const node1 = node('node1');
        const view = await node1.read();
        expect(view.config?.value).toEqual({});
        expect(view.history?.value).toEqual([]);
        expect(view.sync?.value).toEqual({ leader: null, sync_standby: null });
        expect(view.status?.value).toEqual({});
        expect(view.members).toEqual([]);
        expect(await node1.setConfig({ ttl: 30 }, view.config!.modRevision)).toBe(true);
        expect((await node1.read()).config?.value).toEqual({ ttl: 30 });
      });

      it.each([
        ['{}', {}],
        ['', {}],
        [
          '{"leader":"node1","scheduled_at":"2026-01-01T10:00:00+00:00"}',
          { leader: 'node1', scheduled_at: '2026-01-01T10:00:00+00:00' },
        ],
        ['node1:node2', { leader: 'node1', member: 'node2' }],
      ])('reads failover %j as %j', async (stored, expected) => {
        await fixture.putRaw(key('failover'), stored);
        expect((await node('node1').read()).failover?.value).toEqual(expected);
      });

      it('reads history entries without timestamp and new leader as they are', async () => {
        await fixture.putRaw(key('history'), '[[1,25165984,"no recovery target specified"]]');
        expect((await node('node1').read()).history?.value).toEqual([[1, 25_165_984, 'no recovery target specified']]);
      });

      it('counts only members/<name> keys as members and ignores unknown keys', async () => {
        await fixture.putRaw(key('members/node3'), JSON.stringify(member('running')));
        await fixture.putRaw(key('members/node3/extra'), '{}');
        await fixture.putRaw(key('optime/leader'), '123');
        expect((await node('node1').read()).members.map((m) => m.name)).toEqual(['node3']);
      });
    });

    describe('changes', () => {
      it('emits a resync once live, then each change under the cluster prefix with relative keys, within 1 s', async () => {
        const node1 = node('node1');
        const changes = await recordChanges(node('node2'));
        await node1.touchMember(member('running'));
        await fixture.putRaw(`/service/${fixture.scope}-other/leader`, 'x');
        await node1.acquireLeader();
        await node1.releaseLeader();
        const releasedAt = performance.now();
        const deleted = await waitFor(
          () => changes.find(({ change }) => change.key === 'leader' && change.type === 'delete'),
          {
            description: 'the leader delete on the watch',
          },
        );
        expect(deleted.at - releasedAt).toBeLessThan(1000);
        expect(changes.map(({ change }) => change)).toEqual<DcsChange[]>([
          { key: null, type: 'resync' },
          { key: 'members/node1', type: 'put' },
          { key: 'leader', type: 'put' },
          { key: 'leader', type: 'delete' },
        ]);
      });

      it('reports lease expiry as a delete', async () => {
        const node1 = node('node1', fixture.shortTtlSeconds);
        await node1.acquireLeader();
        const changes = await recordChanges(node('node2'));
        await fixture.passTimeUntil(() => changes.length > 1, 'a change after the resync');
        expect(changes.map(({ change }) => change)).toEqual<DcsChange[]>([
          { key: null, type: 'resync' },
          { key: 'leader', type: 'delete' },
        ]);
      });

      it('gives a subscriber that joins a live watch a resync of its own, then the same changes as the first', async () => {
        const node1 = node('node1');
        const watcher = node('node2');
        const first = await recordChanges(watcher);
        const second = await recordChanges(watcher);
        await node1.acquireLeader();
        await waitFor(() => first.length > 1 && second.length > 1, {
          description: 'the leader put on both subscriptions',
        });
        const expected: DcsChange[] = [
          { key: null, type: 'resync' },
          { key: 'leader', type: 'put' },
        ];
        expect(first.map(({ change }) => change)).toEqual(expected);
        expect(second.map(({ change }) => change)).toEqual(expected);
      });

      it('completes when the node closes', async () => {
        const node1 = node('node1');
        const changes: DcsChange[] = [];
        let completed = false;
        subscriptions.push(
          node1.changes().subscribe({ next: (change) => changes.push(change), complete: () => (completed = true) }),
        );
        await waitFor(() => changes.length > 0, { description: 'the watch to be live' });
        await node1.close();
        await waitFor(() => completed, { description: 'the changes to complete' });
        expect(changes).toEqual([{ key: null, type: 'resync' }]);
      });
    });

    // Last in the contract, so that writes which timed out but land late disturb no other test.
    it('rejects every call with DcsError within the deadline while the store is unreachable, and serves the holder again after', async () => {
      const node1 = node('node1');
      await node1.acquireLeader();
      const reconnect = await fixture.cutOff();
      try {
        const started = performance.now();
        // No release here: a timed-out request can still be applied once the store is back.
        const calls = [
          node1.read(),
          node1.refreshLeader(),
          node1.acquireLeader(),
          node1.touchMember(member('running')),
          node1.setConfig({ ttl: 30 }),
          node1.setStatus({ optime: 1 }),
        ];
        // The guard only keeps a hang from holding the store unreachable (and this test) until jest's timeout.
        const outcomes = await allSettledWithin(calls, fixture.callDeadlineMs + 5000);
        const elapsed = performance.now() - started;
        expect(outcomes.map((outcome) => outcome.status)).toEqual(calls.map(() => 'rejected'));
        for (const outcome of outcomes) expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(DcsError);
        expect(elapsed).toBeLessThan(fixture.callDeadlineMs + 300);
      } finally {
        await reconnect();
      }
      // A store that was frozen first works through the requests that piled up; under CPU load that
      // can take longer than one call's deadline.
      const lock = await waitFor(() => node1.refreshLeader().then((refreshed) => ({ refreshed })), {
        timeoutMs: 10_000,
        description: 'refreshLeader to answer once the store is reachable',
      });
      expect(lock.refreshed).not.toBeNull();
      expect((await node1.read()).leader?.value).toBe('node1');
      expect(await node1.acquireLeader()).not.toBeNull();
    });
  });
}
