import { execFileSync } from 'node:child_process';
import { buildMetrics, epochSeconds, paddedVersion } from '../../../src/api/metrics';
import { ApiIdentity } from '../../../src/api/status-document';
import { NodeView } from '../../../src/ha/node-view';
import { leaderView, NOW, postgresDownView, replicaView } from './node-view-fixtures';

const STATOR: ApiIdentity = { scope: 'demo', version: '0.1.0', productKey: 'stator' };
const PATRONI: ApiIdentity = { ...STATOR, productKey: 'patroni' };

/** `promtool check metrics` on the text: its exit code and what it printed (the binary must be installed). */
function promtoolCheck(text: string): { code: number; output: string } {
  try {
    const output = execFileSync('promtool', ['check', 'metrics'], {
      input: text,
      encoding: 'utf8',
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    return { code: 0, output };
  } catch (error) {
    const failure = error as { status?: number | null; code?: string; stdout?: string; stderr?: string };
    if (failure.code === 'ENOENT')
      throw new Error('promtool is not installed (Debian package "prometheus" provides /usr/bin/promtool)', {
        cause: error,
      });
    return { code: failure.status ?? -1, output: `${failure.stdout ?? ''}${failure.stderr ?? ''}` };
  }
}

/** The sample value of a metric, or undefined when the metric is absent. */
function sample(text: string, name: string): string | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name}{`));
  return line?.slice(line.lastIndexOf(' ') + 1);
}

const LEADER_METRICS = `# HELP stator_version Stator semver without periods.
# TYPE stator_version gauge
stator_version{scope="demo",name="node1"} 000100
# HELP stator_postgres_running Value is 1 if Postgres is running, 0 otherwise.
# TYPE stator_postgres_running gauge
stator_postgres_running{scope="demo",name="node1"} 1
# HELP stator_postmaster_start_time Epoch seconds since Postgres started.
# TYPE stator_postmaster_start_time gauge
stator_postmaster_start_time{scope="demo",name="node1"} 1795238786.449223
# HELP stator_primary Value is 1 if this node is the leader, 0 otherwise.
# TYPE stator_primary gauge
stator_primary{scope="demo",name="node1"} 1
# HELP stator_xlog_location Current location of the Postgres transaction log, 0 if this node is not the leader.
# TYPE stator_xlog_location gauge
stator_xlog_location{scope="demo",name="node1"} 134507856
# HELP stator_standby_leader Value is 1 if this node is the standby_leader, 0 otherwise.
# TYPE stator_standby_leader gauge
stator_standby_leader{scope="demo",name="node1"} 0
# HELP stator_replica Value is 1 if this node is a replica, 0 otherwise.
# TYPE stator_replica gauge
stator_replica{scope="demo",name="node1"} 0
# HELP stator_sync_standby Value is 1 if this node is a sync standby, 0 otherwise.
# TYPE stator_sync_standby gauge
stator_sync_standby{scope="demo",name="node1"} 0
# HELP stator_quorum_standby Value is 1 if this node is a quorum standby, 0 otherwise.
# TYPE stator_quorum_standby gauge
stator_quorum_standby{scope="demo",name="node1"} 0
# HELP stator_xlog_received_location Current location of the received Postgres transaction log, 0 if this node is not a replica.
# TYPE stator_xlog_received_location gauge
stator_xlog_received_location{scope="demo",name="node1"} 0
# HELP stator_xlog_replayed_location Current location of the replayed Postgres transaction log, 0 if this node is not a replica.
# TYPE stator_xlog_replayed_location gauge
stator_xlog_replayed_location{scope="demo",name="node1"} 0
# HELP stator_xlog_replayed_timestamp Current timestamp of the replayed Postgres transaction log, 0 if null.
# TYPE stator_xlog_replayed_timestamp gauge
stator_xlog_replayed_timestamp{scope="demo",name="node1"} 0
# HELP stator_xlog_paused Value is 1 if the Postgres xlog is paused, 0 otherwise.
# TYPE stator_xlog_paused gauge
stator_xlog_paused{scope="demo",name="node1"} 0
# HELP stator_postgres_streaming Value is 1 if Postgres is streaming, 0 otherwise.
# TYPE stator_postgres_streaming gauge
stator_postgres_streaming{scope="demo",name="node1"} 0
# HELP stator_postgres_in_archive_recovery Value is 1 if Postgres is replicating from archive, 0 otherwise.
# TYPE stator_postgres_in_archive_recovery gauge
stator_postgres_in_archive_recovery{scope="demo",name="node1"} 0
# HELP stator_postgres_server_version Version of Postgres (if running), 0 otherwise.
# TYPE stator_postgres_server_version gauge
stator_postgres_server_version{scope="demo",name="node1"} 150018
# HELP stator_cluster_unlocked Value is 1 if the cluster is unlocked, 0 if locked.
# TYPE stator_cluster_unlocked gauge
stator_cluster_unlocked{scope="demo",name="node1"} 0
# HELP stator_failsafe_mode_is_active Value is 1 if failsafe mode is active, 0 if inactive.
# TYPE stator_failsafe_mode_is_active gauge
stator_failsafe_mode_is_active{scope="demo",name="node1"} 0
# HELP stator_failsafe_mode_enabled Value is 1 if failsafe_mode is enabled, 0 otherwise.
# TYPE stator_failsafe_mode_enabled gauge
stator_failsafe_mode_enabled{scope="demo",name="node1"} 0
# HELP stator_failsafe_member Value is 1 if this node is a member of failsafe, 0 otherwise.
# TYPE stator_failsafe_member gauge
stator_failsafe_member{scope="demo",name="node1"} 0
# HELP stator_postgres_timeline Postgres timeline of this node (if running), 0 otherwise.
# TYPE stator_postgres_timeline gauge
stator_postgres_timeline{scope="demo",name="node1"} 11
# HELP stator_dcs_last_seen Epoch timestamp when DCS was last contacted successfully by Stator.
# TYPE stator_dcs_last_seen gauge
stator_dcs_last_seen{scope="demo",name="node1"} 1795239209
# HELP stator_pending_restart Value is 1 if the node needs a restart, 0 otherwise.
# TYPE stator_pending_restart gauge
stator_pending_restart{scope="demo",name="node1"} 0
# HELP stator_is_paused Value is 1 if auto failover is disabled, 0 otherwise.
# TYPE stator_is_paused gauge
stator_is_paused{scope="demo",name="node1"} 0
# HELP stator_postgres_state Numeric representation of Postgres state.
# Values: 0=initdb, 1=initdb_failed, 2=custom_bootstrap, 3=custom_bootstrap_failed, 4=creating_replica, 5=running, 6=starting, 7=bootstrap_starting, 8=start_failed, 9=restarting, 10=restart_failed, 11=stopping, 12=stopped, 13=stop_failed, 14=crashed
# TYPE stator_postgres_state gauge
stator_postgres_state{scope="demo",name="node1"} 5
# HELP stator_failover_priority Failover priority of this node.
# TYPE stator_failover_priority gauge
stator_failover_priority{scope="demo",name="node1"} 2
`;

describe('buildMetrics', () => {
  it('writes every metric of the reference in its order, with its HELP text, for a leader', () => {
    expect(buildMetrics(leaderView(), STATOR, NOW)).toBe(LEADER_METRICS);
  });

  it('reports a streaming replica', () => {
    const text = buildMetrics(replicaView(), STATOR, NOW);

    expect(sample(text, 'stator_primary')).toBe('0');
    expect(sample(text, 'stator_replica')).toBe('1');
    expect(sample(text, 'stator_xlog_location')).toBe('0');
    expect(sample(text, 'stator_xlog_received_location')).toBe('83886080');
    expect(sample(text, 'stator_xlog_replayed_location')).toBe('83886000');
    expect(sample(text, 'stator_xlog_replayed_timestamp')).toBe('1795239208.5');
    expect(sample(text, 'stator_postmaster_start_time')).toBe('1795238512');
    expect(sample(text, 'stator_postgres_streaming')).toBe('1');
    expect(sample(text, 'stator_postgres_in_archive_recovery')).toBe('0');
    expect(sample(text, 'stator_pending_restart')).toBe('1');
    // No failover_priority tag: the reference's default.
    expect(sample(text, 'stator_failover_priority')).toBe('1');
  });

  it('reports a sync standby when synchronous mode is on and the sync key names the node', () => {
    const view = replicaView();
    const cluster = view.cluster!;
    cluster.config = { value: { ...cluster.config!.value, synchronous_mode: true }, modRevision: '4' };
    cluster.sync = { value: { leader: 'node1', sync_standby: 'node2' }, modRevision: '5' };

    const text = buildMetrics(view, STATOR, NOW);

    expect(sample(text, 'stator_sync_standby')).toBe('1');
    expect(sample(text, 'stator_quorum_standby')).toBe('0');
  });

  it('reports zeros while PostgreSQL is down and leaves out the lines that need a server version', () => {
    const text = buildMetrics(postgresDownView(), STATOR, NOW);

    for (const name of [
      'postgres_running',
      'postmaster_start_time',
      'xlog_location',
      'xlog_received_location',
      'xlog_replayed_location',
      'postgres_server_version',
      'postgres_timeline',
      'failover_priority',
    ]) {
      expect([name, sample(text, `stator_${name}`)]).toEqual([name, '0']);
    }
    // The role of a stopped node is the role machine's, as in the status document.
    expect(sample(text, 'stator_replica')).toBe('1');
    expect(sample(text, 'stator_postgres_state')).toBe('12');
    expect(text).not.toContain('stator_postgres_streaming');
    expect(text).not.toContain('stator_postgres_in_archive_recovery');
  });

  it('reports an unlocked cluster and pause', () => {
    const view = replicaView();
    view.cluster = { ...view.cluster!, leader: null };
    view.config = { ...view.config, pause: true };

    const text = buildMetrics(view, STATOR, NOW);

    expect(sample(text, 'stator_cluster_unlocked')).toBe('1');
    expect(sample(text, 'stator_is_paused')).toBe('1');
  });

  it('speaks Patroni in compatibility mode', () => {
    const text = buildMetrics(leaderView(), PATRONI, NOW);

    expect(text).toBe(
      LEADER_METRICS.replace(/stator_/g, 'patroni_')
        .replace(/by Stator\./, 'by Patroni.')
        .replace('Stator semver', 'Patroni semver'),
    );
  });

  it('escapes label values', () => {
    const text = buildMetrics(leaderView(), { ...STATOR, scope: 'a"b\\c' }, NOW);

    expect(text).toContain('stator_primary{scope="a\\"b\\\\c",name="node1"} 1');
  });

  it.each([
    ['leader', leaderView, STATOR],
    ['replica', replicaView, STATOR],
    ['PostgreSQL down', postgresDownView, STATOR],
    ['compat mode', leaderView, PATRONI],
  ] as Array<[string, () => NodeView, ApiIdentity]>)('passes promtool check metrics (%s)', (_case, view, identity) => {
    const result = promtoolCheck(buildMetrics(view(), identity, NOW));

    expect(result).toEqual({ code: 0, output: '' });
  });
});

describe('metric values', () => {
  it('pads each version part to two digits', () => {
    expect(paddedVersion('3.0.2')).toBe('030002');
    expect(paddedVersion('4.1.14')).toBe('040114');
    expect(paddedVersion('0.2.0-rc1')).toBe('000200');
  });

  it('turns status timestamps into epoch seconds, keeping microseconds', () => {
    expect(epochSeconds('2024-08-28 19:39:26.352526+00:00')).toBe(1724873966.352526);
    expect(epochSeconds('2024-08-28 21:39:26+02:00')).toBe(1724873966);
    expect(epochSeconds(undefined)).toBe(0);
    expect(epochSeconds('yesterday')).toBe(0);
  });
});
