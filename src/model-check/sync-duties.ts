import { ClusterView } from '../dcs/dcs.port';
import { planPriority } from '../ha/sync/priority-plan';
import { SyncReadiness } from '../ha/sync/readiness';
import { pickSynchronous, syncCandidates } from '../ha/sync/sync-candidates';
import { syncKeyValue } from '../ha/sync/sync-key';
import { parseStandbyNames } from '../postgresql/standby-names';
import { ClusterModel, NODE_NAMES } from './model';
import { configOf, safeMembers, streamingFrom } from './snapshot';

const indexOf = (name: string) => NODE_NAMES.indexOf(name as (typeof NODE_NAMES)[number]);

/**
 * The lock holder's synchronous replication duties (SyncReplication.manage) with the real planners:
 * candidates, readiness, pick and the ordered plan of `/sync` and synchronous_standby_names steps.
 * A standby counts as caught up when it holds the leader's position now (the agent uses the position
 * when the setting changed, which is never later): never more permissive than the agent.
 */
export function manageSync(c: ClusterModel, i: number, view: ClusterView): void {
  const n = c.nodes[i];
  const config = configOf(c);
  if (c.mode === 'off') {
    c.sync = null;
    n.standbyNames = '';
    return;
  }
  if (!c.sync || c.sync.leader !== i) c.sync = { leader: i, standbys: [] };
  const name = NODE_NAMES[i];
  const sample = {
    walPosition: n.wal,
    synchronousStandbyNames: n.standbyNames,
    synchronousCommit: 'on',
    replication: streamingFrom(c, i).map((j) => ({
      usename: 'replicator',
      application_name: NODE_NAMES[j],
      client_addr: null,
      state: 'streaming',
      sync_state: safeMembers(n.standbyNames).includes(NODE_NAMES[j]) ? 'sync' : 'async',
      sync_priority: 1,
      write_lsn: c.nodes[j].wal,
      flush_lsn: c.nodes[j].wal,
      replay_lsn: c.nodes[j].wal,
    })),
  };
  const syncState = syncKeyValue(name, c.sync.standbys.map((j) => NODE_NAMES[j]));
  const candidates = syncCandidates(name, view, sample as never);
  const readiness = new SyncReadiness();
  readiness.observe(n.standbyNames, n.wal);
  const ready = readiness.update(candidates, syncState, false);
  const picked = pickSynchronous(candidates, ready, n.wal, config);
  const steps = planPriority({
    voters: c.sync.standbys.map((j) => NODE_NAMES[j]),
    currentValue: n.standbyNames,
    standbyNames: parseStandbyNames(n.standbyNames),
    active: picked.active,
    confirmed: picked.confirmed,
    strict: config.synchronous_mode_strict,
  });
  for (const step of steps) {
    if (step.type === 'writeSync') c.sync = { leader: i, standbys: step.standbys.map(indexOf).sort() };
    else if (step.type === 'setStandbyNames') n.standbyNames = step.value;
  }
}
