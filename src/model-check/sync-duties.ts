import { ClusterView } from '../dcs/dcs.port';
import { parseStandbyNames } from '../postgresql/standby-names';
import { leaderSiteOf, streamingPositions } from '../ha/sync/sync-candidates';
import { DecisionCode } from './decision-code';
import { replayLsn, writeLsn } from './commit-columns';
import { ClusterModel, NODE_NAMES } from './model';
import { configOf, safeMembers, standbyKind, streamingFrom } from './snapshot';

const indexOf = (name: string) => NODE_NAMES.indexOf(name as (typeof NODE_NAMES)[number]);

/**
 * The lock holder's synchronous replication duties (SyncReplication.manage) with the real planners:
 * candidates, readiness, pick and the ordered plan of `/sync` and synchronous_standby_names steps.
 * A standby counts as caught up when it holds the leader's position now (the agent uses the position
 * when the setting changed, which is never later): never more permissive than the agent.
 */
export function manageSync(c: ClusterModel, i: number, view: ClusterView, code: DecisionCode): void {
  const {
    planPriority,
    planQuorum,
    SyncReadiness,
    pickSynchronous,
    quorumAcknowledgedPosition,
    syncCandidates,
    syncKeyValue,
    syncQuorumOf,
  } = code;
  const n = c.nodes[i];
  const config = configOf(c);
  if (c.mode === 'off') {
    c.sync = null;
    n.standbyNames = '';
    return;
  }
  const quorumMode = c.mode === 'quorum';
  // In quorum mode the resolver hands `/sync` over from a former leader itself, keeping its quorum.
  if (!c.sync || (c.sync.leader !== i && !quorumMode)) c.sync = { leader: i, standbys: [], quorum: 0 };
  const name = NODE_NAMES[i];
  const listedKind = standbyKind(n.standbyNames);
  const sample = {
    walPosition: n.wal,
    synchronousStandbyNames: n.standbyNames,
    synchronousCommit: c.settings?.synchronousCommit ?? 'on',
    replication: streamingFrom(c, i).map((j) => ({
      usename: 'replicator',
      application_name: NODE_NAMES[j],
      client_addr: null,
      state: 'streaming',
      sync_state: safeMembers(n.standbyNames).includes(NODE_NAMES[j])
        ? listedKind === 'quorum'
          ? 'quorum'
          : 'sync'
        : 'async',
      sync_priority: 1,
      write_lsn: writeLsn(c.nodes[j]),
      flush_lsn: c.nodes[j].wal,
      replay_lsn: replayLsn(c.nodes[j]),
    })),
  };
  const sync = c.sync;
  const syncState = syncKeyValue(
    NODE_NAMES[sync.leader],
    sync.standbys.map((j) => NODE_NAMES[j]),
    sync.quorum,
  );
  const candidates = syncCandidates(name, view, sample as never);
  const readiness = new SyncReadiness();
  readiness.observe(n.standbyNames, n.wal);
  const ready = readiness.update(candidates, syncState, quorumMode);
  const standbyNames = parseStandbyNames(n.standbyNames);
  const acknowledgedUpTo = quorumMode
    ? quorumAcknowledgedPosition(streamingPositions(sample as never), standbyNames.members, standbyNames.count)
    : 0;
  const picked = pickSynchronous(candidates, ready, n.wal, config, acknowledgedUpTo, leaderSiteOf(view, name));
  const common = {
    voters: sync.standbys.map((j) => NODE_NAMES[j]),
    currentValue: n.standbyNames,
    standbyNames,
    active: picked.active,
    confirmed: picked.confirmed,
    strict: config.synchronous_mode_strict,
    sitesMissing: picked.sitesMissing,
  };
  const steps = quorumMode
    ? planQuorum({
        ...common,
        leader: NODE_NAMES[sync.leader],
        me: name,
        quorum: syncQuorumOf(syncState),
        syncWanted: picked.syncWanted,
      })
    : planPriority(common);
  for (const step of steps) {
    if (step.type === 'writeSync')
      c.sync = {
        leader: step.leader ? indexOf(step.leader) : i,
        standbys: step.standbys.map(indexOf).sort(),
        quorum: quorumMode ? step.quorum : 0,
      };
    else if (step.type === 'setStandbyNames') n.standbyNames = step.value;
  }
}
