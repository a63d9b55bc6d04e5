import {
  controlDataMinimums,
  raisedSettingLine,
  raiseToControlData,
} from '../../../src/postgresql/hot-standby-minimums';

/** The lines of PostgreSQL 15's pg_controldata (LC_ALL=C) that matter here, among others around them. */
const CONTROL_DATA = `pg_control version number:            1300
Database cluster state:               in archive recovery
wal_level setting:                    replica
wal_log_hints setting:                on
max_connections setting:              200
max_worker_processes setting:         8
max_wal_senders setting:              12
max_prepared_xacts setting:           5
max_locks_per_xact setting:           64
track_commit_timestamp setting:       off
`;

describe("a server started in recovery runs with at least the settings its primary's pg_control recorded", () => {
  it("reads the primary's values from pg_controldata", () => {
    expect(controlDataMinimums(CONTROL_DATA)).toEqual({
      max_connections: 200,
      max_worker_processes: 8,
      max_wal_senders: 12,
      max_prepared_transactions: 5,
      max_locks_per_transaction: 64,
    });
    expect(controlDataMinimums('Database cluster state: shut down\nmax_connections setting: lots\n')).toEqual({});
  });

  it('raises lower or unset values, and keeps higher ones and the rest', () => {
    const parameters: Record<string, string | number | boolean> = {
      max_connections: '100',
      max_wal_senders: 20,
      max_locks_per_transaction: 64,
      work_mem: '4MB',
    };
    const raised = raiseToControlData(parameters, controlDataMinimums(CONTROL_DATA));
    expect(parameters).toEqual({
      max_connections: 200,
      max_wal_senders: 20,
      max_locks_per_transaction: 64,
      max_prepared_transactions: 5,
      work_mem: '4MB',
    });
    expect(raised.map(raisedSettingLine)).toEqual([
      'max_connections value in pg_controldata: 200, in the global configuration: 100. pg_controldata value will be used',
      'max_prepared_transactions value in pg_controldata: 5, in the global configuration: 0. pg_controldata value will be used',
    ]);
  });

  it('leaves a value PostgreSQL will refuse to PostgreSQL', () => {
    const parameters: Record<string, string | number | boolean> = { max_connections: 'many' };
    expect(raiseToControlData(parameters, { max_connections: 200 })).toEqual([]);
    expect(parameters.max_connections).toBe('many');
  });
});
