import { ClusterKeyCache } from '../../../src/dcs/etcd/cluster-key-cache';
import { KeyValue, WatchEvent } from '../../../src/dcs/etcd/etcd-types';

const PREFIX = '/service/batman/';
const kv = (key: string, value: string, modRevision: number): KeyValue => ({
  key: PREFIX + key,
  value,
  createRevision: String(modRevision),
  modRevision: String(modRevision),
  version: '1',
  lease: '0',
});
const put = (key: string, value: string, revision: number): WatchEvent => ({
  type: 'put',
  kv: kv(key, value, revision),
});
const del = (key: string, revision: number): WatchEvent => ({ type: 'delete', kv: kv(key, '', revision) });

describe('ClusterKeyCache', () => {
  it('has no view before the first read, and ignores events until then', () => {
    const cache = new ClusterKeyCache(PREFIX);
    cache.apply([put('leader', 'node1', 5)]);
    expect(cache.view()).toBeNull();
  });

  it('tells the revision and key count a count-only confirmation compares with etcd', () => {
    const cache = new ClusterKeyCache(PREFIX);
    expect(cache.state()).toBeNull();
    cache.replace([kv('leader', 'node1', 9), kv('config', '{"ttl":30}', 4)], '10');
    expect(cache.state()).toEqual({ revision: '10', keys: 2 });
    cache.apply([del('leader', 12)]);
    expect(cache.state()).toEqual({ revision: '12', keys: 1 });
  });

  it.each([
    ['a newer put replaces the value', [put('leader', 'node2', 11)], 'node2', '11'],
    ['a newer delete removes the key', [del('leader', 11)], undefined, '11'],
    ['an older event changes nothing', [put('leader', 'node0', 7)], 'node1', '10'],
    ['events apply in order', [del('leader', 11), put('leader', 'node3', 12)], 'node3', '12'],
  ])('%s', (_case, events, leader, revision) => {
    const cache = new ClusterKeyCache(PREFIX);
    cache.replace([kv('leader', 'node1', 9), kv('config', '{"ttl":30}', 4)], '10');
    cache.apply(events);
    expect(cache.view()?.leader?.value).toBe(leader);
    expect(cache.view()?.revision).toBe(revision);
    expect(cache.view()?.config?.value).toEqual({ ttl: 30 });
  });

  it('applies every change of one transaction: a revoked lease takes the leader key and the member key at one revision', () => {
    const cache = new ClusterKeyCache(PREFIX);
    cache.replace(
      [
        kv('leader', 'node1', 9),
        kv('members/node1', '{"role":"primary"}', 8),
        kv('members/node2', '{"role":"replica"}', 7),
      ],
      '10',
    );
    cache.apply([del('leader', 11), del('members/node1', 11)]);
    expect(cache.view()?.leader).toBeNull();
    expect(cache.view()?.members.map((member) => member.name)).toEqual(['node2']);
  });

  it('changes nothing with an event the read already holds (a late event of the read revision)', () => {
    const cache = new ClusterKeyCache(PREFIX);
    // Read at 10, after node1's key was deleted at 10; its delete event arrives afterwards.
    cache.replace([kv('members/node2', '{"role":"replica"}', 7)], '10');
    cache.apply([del('members/node1', 10)]);
    expect(cache.view()?.members.map((member) => member.name)).toEqual(['node2']);
    expect(cache.view()?.revision).toBe('10');
  });

  it('keeps a later state over an older read, and takes a newer read whole', () => {
    const cache = new ClusterKeyCache(PREFIX);
    cache.replace([kv('leader', 'node1', 9)], '10');
    cache.apply([put('members/node2', '{"role":"replica"}', 12)]);
    cache.replace([kv('leader', 'node1', 9)], '11');
    expect(cache.view()?.members.map((member) => member.name)).toEqual(['node2']);
    cache.replace([kv('leader', 'node2', 13)], '13');
    expect(cache.view()?.members).toEqual([]);
    expect(cache.view()?.leader?.value).toBe('node2');
  });

  it('parses a revision once: the same view until something changes', () => {
    const cache = new ClusterKeyCache(PREFIX);
    cache.replace([kv('leader', 'node1', 9)], '10');
    const first = cache.view();
    expect(cache.view()).toBe(first);
    cache.apply([put('leader', 'node2', 11)]);
    expect(cache.view()).not.toBe(first);
  });
});
