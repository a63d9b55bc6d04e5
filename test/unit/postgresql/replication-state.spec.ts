import { replicationStateOf } from '../../../src/postgresql/pg-sample';

describe('replication_state as Patroni reports it (status document, member key, /replica?replication_state=)', () => {
  it.each([
    ['a primary: none', false, null, true, null],
    ['a replica whose WAL receiver streams', true, 'streaming', true, 'streaming'],
    ['a replica restoring from an archive, not streaming', true, null, true, 'in archive recovery'],
    ['a replica whose receiver is (re)starting, with a restore_command', true, 'starting', true, 'in archive recovery'],
    ['a replica neither streaming nor restoring', true, null, false, null],
  ] as const)('%s', (_name, inRecovery, receiver, restores, expected) => {
    expect(replicationStateOf(inRecovery, receiver, restores)).toBe(expected);
  });
});
