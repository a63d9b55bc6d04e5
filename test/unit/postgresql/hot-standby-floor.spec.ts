import { hotStandbyFloor, raisedToFloor } from '../../../src/postgresql/process/hot-standby-floor';

/** What pg_controldata (PostgreSQL 15, LC_ALL=C) prints about the primary's settings. */
const CONTROL_DATA = [
  'Database cluster state:               in archive recovery',
  'wal_level setting:                    replica',
  'max_connections setting:              101',
  'max_worker_processes setting:         8',
  'max_wal_senders setting:              10',
  'max_prepared_xacts setting:           0',
  'max_locks_per_xact setting:           64',
].join('\n');

describe('hot standby settings from pg_control', () => {
  it('reads the primary’s values pg_controldata prints', () => {
    expect(hotStandbyFloor(CONTROL_DATA)).toEqual({ max_connections: 101, max_worker_processes: 8, max_wal_senders: 10, max_prepared_transactions: 0, max_locks_per_transaction: 64 });
  });

  it('raises what is lower, or unset with a lower default, and leaves the rest', () => {
    const floor = { ...hotStandbyFloor(CONTROL_DATA), max_worker_processes: 16 };
    const { parameters, raised } = raisedToFloor({ max_connections: 100, max_wal_senders: '20', work_mem: '4MB' }, floor);
    expect(parameters).toEqual({ max_connections: 101, max_wal_senders: '20', work_mem: '4MB', max_worker_processes: 16 });
    expect(raised).toEqual(['max_connections 100 -> 101', 'max_worker_processes (default) -> 16']);
  });
});
