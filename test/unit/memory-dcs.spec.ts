import { firstValueFrom, take, toArray } from 'rxjs';
import { ManualClock } from '../../src/common/clock';
import { DcsChange, DcsError, MemberData } from '../../src/dcs/dcs.port';
import { MemoryDcs, MemoryDcsBackend } from '../../src/dcs/memory-dcs';

const TTL_SECONDS = 30;
const member = (state: string): MemberData => ({
  conn_url: 'postgres://127.0.0.1:5432/postgres',
  api_url: 'http://127.0.0.1:8008/patroni',
  state,
  role: 'replica',
  version: '4.0.0',
});

describe(MemoryDcs.name, () => {
  let clock: ManualClock;
  let backend: MemoryDcsBackend;
  let node1: MemoryDcs;
  let node2: MemoryDcs;
  const node = (name: string) => new MemoryDcs(backend, { namespace: '/service', scope: 'batman', name, ttlSeconds: TTL_SECONDS });

  beforeEach(() => {
    clock = new ManualClock();
    backend = new MemoryDcsBackend(clock);
    node1 = node('node1');
    node2 = node('node2');
  });

  describe('leader lock', () => {
    it('is acquired by one node only; the other gets null', async () => {
      const lease = await node1.acquireLeader();
      expect(lease).toEqual({ validUntil: clock.now() + TTL_SECONDS * 1000 });
      expect(await node2.acquireLeader()).toBeNull();
      expect((await node2.read()).leader?.value).toBe('node1');
    });

    it('stores the leader as a plain string under the Patroni key', async () => {
      await node1.acquireLeader();
      expect(backend.get('/service/batman/leader')?.value).toBe('node1');
    });

    it('refresh extends validUntil from the time of the refresh', async () => {
      await node1.acquireLeader();
      clock.advance(10_000);
      expect(await node1.refreshLeader()).toEqual({ validUntil: clock.now() + TTL_SECONDS * 1000 });
    });

    it('refresh returns null for a non-holder and when the key is gone, without re-creating it', async () => {
      await node1.acquireLeader();
      expect(await node2.refreshLeader()).toBeNull();
      await node1.releaseLeader();
      expect(await node1.refreshLeader()).toBeNull();
      expect((await node1.read()).leader).toBeNull();
    });

    it('release deletes the key only for the holder', async () => {
      await node1.acquireLeader();
      expect(await node2.releaseLeader()).toBe(false);
      expect(await node1.releaseLeader()).toBe(true);
      expect(await node2.acquireLeader()).not.toBeNull();
    });

    it('forceLeader overwrites whoever holds the key', async () => {
      await node1.acquireLeader();
      await node2.forceLeader();
      expect((await node1.read()).leader?.value).toBe('node2');
    });
  });

  describe('lease', () => {
    it('expires after ttl without keepalive, taking the leader and member keys with it', async () => {
      await node1.touchMember(member('running'));
      await node1.acquireLeader();
      clock.advance(TTL_SECONDS * 1000 - 1);
      backend.expireLeases();
      expect((await node2.read()).leader?.value).toBe('node1');

      clock.advance(1);
      backend.expireLeases();
      const view = await node2.read();
      expect(view.leader).toBeNull();
      expect(view.members).toEqual([]);
      expect(await node2.acquireLeader()).not.toBeNull();
    });

    it('is kept alive by member touches, which keeps the leader key too (one lease per node)', async () => {
      await node1.acquireLeader();
      for (let second = 0; second < 3 * TTL_SECONDS; second += 10) {
        clock.advance(10_000);
        await node1.touchMember(member('running'));
      }
      expect((await node2.read()).leader?.value).toBe('node1');
    });

    it('is granted again after it was lost, and refresh of a lost lock returns null', async () => {
      await node1.acquireLeader();
      clock.advance(TTL_SECONDS * 1000);
      await node2.acquireLeader();
      expect(await node1.refreshLeader()).toBeNull();
      await node1.touchMember(member('running'));
      expect((await node2.read()).members.map((m) => m.name)).toEqual(['node1']);
    });

    it('setTtl re-grants the lease; refresh moves the leader key onto the new one', async () => {
      await node1.acquireLeader();
      await node1.setTtl(10);
      expect(await node1.refreshLeader()).toEqual({ validUntil: clock.now() + 10_000 });
      for (let elapsed = 0; elapsed <= TTL_SECONDS * 1000; elapsed += 9_000) {
        clock.advance(9_000); // past the old lease's expiry: the key lives on the new one
        expect(await node1.refreshLeader()).not.toBeNull();
      }
      expect((await node2.read()).leader?.value).toBe('node1');
    });

    it('close revokes the lease: leader and member disappear at once', async () => {
      await node1.touchMember(member('running'));
      await node1.acquireLeader();
      await node1.close();
      const view = await node2.read();
      expect(view.leader).toBeNull();
      expect(view.members).toEqual([]);
      await expect(node1.read()).rejects.toBeInstanceOf(DcsError);
    });
  });

  describe('member keys', () => {
    it('lists members sorted by name with their JSON data', async () => {
      await node2.touchMember(member('running'));
      await node1.touchMember(member('starting'));
      const view = await node1.read();
      expect(view.members.map((m) => [m.name, m.data.state])).toEqual([
        ['node1', 'starting'],
        ['node2', 'running'],
      ]);
    });

    it('skips the write when nothing changed', async () => {
      await node1.touchMember(member('running'));
      const revision = backend.currentRevision;
      await node1.touchMember(member('running'));
      expect(backend.currentRevision).toBe(revision);
      await node1.touchMember(member('stopped'));
      expect(backend.currentRevision).not.toBe(revision);
    });
  });

  describe('compare-and-set', () => {
    it('writes config only at the expected revision', async () => {
      expect(await node1.setConfig({ ttl: 30 }, 'absent')).toBe(true);
      expect(await node2.setConfig({ ttl: 99 }, 'absent')).toBe(false);
      const { config } = await node1.read();
      expect(await node1.setConfig({ ttl: 20 }, config!.modRevision)).toBe(true);
      expect(await node2.setConfig({ ttl: 40 }, config!.modRevision)).toBe(false);
      expect((await node2.read()).config?.value).toEqual({ ttl: 20 });
    });

    it('lets only one node win the initialize race; cancel gives it back', async () => {
      expect(await node1.initialize('', true)).toBe(true);
      expect(await node2.initialize('', true)).toBe(false);
      await node1.cancelInitialization();
      expect(await node2.initialize('', true)).toBe(true);
      await node2.initialize('7301234567890123456', false);
      expect((await node1.read()).initialize).toBe('7301234567890123456');
    });

    it('writes failover with CAS and history and status plainly', async () => {
      await node1.setFailover({ leader: 'node1', member: 'node2' });
      const { failover } = await node1.read();
      expect(await node2.setFailover({}, failover!.modRevision)).toBe(true);
      await node1.setHistory([[1, 25_165_984, 'no recovery target specified', '2026-01-01T00:00:00+00:00', 'node1']]);
      await node1.setStatus({ optime: 67_108_960 });
      const view = await node2.read();
      expect(view.failover?.value).toEqual({});
      expect(view.history?.value).toEqual([[1, 25_165_984, 'no recovery target specified', '2026-01-01T00:00:00+00:00', 'node1']]);
      expect(view.status?.value).toEqual({ optime: 67_108_960 });
    });
  });

  describe('reading values written by others', () => {
    const put = (key: string, value: string) => backend.put(`/service/batman/${key}`, value);

    it('tolerates malformed JSON and keeps the revision for a CAS over it', async () => {
      put('config', '{not json');
      put('history', 'nope');
      put('sync', '[1,2]');
      put('status', '');
      put('members/broken', 'garbage');
      const view = await node1.read();
      expect(view.config?.value).toEqual({});
      expect(view.history?.value).toEqual([]);
      expect(view.sync?.value).toEqual({ leader: null, sync_standby: null });
      expect(view.status?.value).toEqual({});
      expect(view.members).toEqual([]);
      expect(await node1.setConfig({ ttl: 30 }, view.config!.modRevision)).toBe(true);
    });

    it.each([
      ['{}', {}],
      ['', {}],
      ['{"leader":"node1","scheduled_at":"2026-01-01T10:00:00+00:00"}', { leader: 'node1', scheduled_at: '2026-01-01T10:00:00+00:00' }],
      ['node1:node2', { leader: 'node1', member: 'node2' }],
    ])('reads failover %j as %j', async (stored, expected) => {
      put('failover', stored);
      expect((await node1.read()).failover?.value).toEqual(expected);
    });

    it('counts only members/<name> keys as members and ignores unknown keys', async () => {
      put('members/node3', JSON.stringify(member('running')));
      put('members/node3/extra', '{}');
      put('optime/leader', '123');
      expect((await node1.read()).members.map((m) => m.name)).toEqual(['node3']);
    });
  });

  describe('changes', () => {
    it('emits a resync first, then each change under the cluster prefix with relative keys', async () => {
      const changes = firstValueFrom(node2.changes().pipe(take(4), toArray()));
      await node1.touchMember(member('running'));
      backend.put('/service/other-cluster/leader', 'x');
      await node1.acquireLeader();
      await node1.releaseLeader();
      expect(await changes).toEqual<DcsChange[]>([
        { key: null, type: 'resync' },
        { key: 'members/node1', type: 'put' },
        { key: 'leader', type: 'put' },
        { key: 'leader', type: 'delete' },
      ]);
    });

    it('reports lease expiry as deletes', async () => {
      await node1.acquireLeader();
      const changes = firstValueFrom(node2.changes().pipe(take(2), toArray()));
      clock.advance(TTL_SECONDS * 1000);
      backend.expireLeases();
      expect((await changes)[1]).toEqual({ key: 'leader', type: 'delete' });
    });

    it('completes when the node closes', async () => {
      const changes = firstValueFrom(node1.changes().pipe(toArray()));
      await node1.close();
      expect(await changes).toEqual([{ key: null, type: 'resync' }]);
    });
  });

  it('rejects every call with DcsError while the backend is unreachable, and works again after', async () => {
    backend.setReachable(false);
    await expect(node1.read()).rejects.toBeInstanceOf(DcsError);
    await expect(node1.acquireLeader()).rejects.toBeInstanceOf(DcsError);
    await expect(node1.touchMember(member('running'))).rejects.toBeInstanceOf(DcsError);
    backend.setReachable(true);
    expect(await node1.acquireLeader()).not.toBeNull();
  });
});
