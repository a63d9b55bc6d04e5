import { UpstreamNode } from '../postgresql/postgres.port';
import { HaSnapshot, isNoFailover, upstreamOf } from './cluster-snapshot';
import { cloneMember } from './clone-source';
import { Decision } from './decision';
import { remotePrimary } from './standby-cluster';
import { failedTaskRetryAt, startRetryDelayMs } from './start-failure';

/*
 * decide()'s answers for a node without a data directory (bootstrap or clone) and for one whose bootstrap is
 * under way: they start, clone or wait, and never end a primary's writes.
 */

/** No data directory yet: bootstrap the cluster, clone a member, or wait (reference 3.3). */
export function bootstrap(s: HaSnapshot): Decision {
  const cluster = s.cluster!;
  const leaderName = cluster.leader?.value ?? null;
  if (!leaderName) {
    // Watchdog mode `required` without one: the reference cancels such a bootstrap after initdb; this node never starts it.
    if (cluster.initialize === null && !isNoFailover(s.local.tags) && !s.local.watchdogFailed) {
      const remote = remotePrimary(s.config.standby_cluster);
      const retry = remote ? standbyBootstrapBackoff(s) : null;
      if (retry) return retry;
      if (!s.initializeResult) return { need: 'raceInitialize' };
      // A standby cluster's first member clones the remote primary instead of running initdb.
      if (s.initializeResult === 'won' && remote)
        return {
          verdict: 'trying to bootstrap a new standby leader',
          actions: [{ type: 'bootstrapStandbyLeader', remote }],
        };
      if (s.initializeResult === 'won')
        return { verdict: 'trying to bootstrap a new cluster', actions: [{ type: 'initdb' }] };
      return { verdict: 'failed to acquire initialize lock', actions: [] };
    }
    // A restore from backup (a `no_leader` replica method) needs no member; not while another node bootstraps.
    if (s.local.canCloneWithoutLeader && cluster.initialize !== '')
      return cloneAfterBackoff(s, null, 'trying to bootstrap (without leader)');
    return {
      verdict: `waiting for ${s.config.standby_cluster ? 'standby_leader' : 'leader'} to bootstrap`,
      actions: [],
    };
  }
  const source = cloneSource(s, leaderName);
  if (!source) return { verdict: 'waiting for leader to bootstrap', actions: [] };
  const from = source.name === leaderName ? 'leader' : 'replica';
  return cloneAfterBackoff(s, source, `trying to bootstrap from ${from} '${source.name}'`);
}

/** A standby leader's bootstrap that failed (the remote did not answer) is tried again after a backoff. */
function standbyBootstrapBackoff(s: HaSnapshot): Decision | null {
  const at = failedTaskRetryAt(s.local.lastTask, 'bootstrap_standby_leader', s.now, s.config.loop_wait);
  if (at === null) return null;
  return {
    verdict: `waiting ${Math.ceil((at - s.now) / 1000)} s before bootstrapping the standby leader again: ${s.local.lastTask!.error}`,
    actions: [{ type: 'wakeAt', at }],
  };
}

function cloneAfterBackoff(s: HaSnapshot, source: UpstreamNode | null, verdict: string): Decision {
  const { failedClones, lastCloneAt, lastError } = s.local;
  if (failedClones > 0 && lastCloneAt !== null) {
    // A clone that failed (a refused login, a missing certificate) would fail again at once: back off as for starts.
    const at = lastCloneAt + startRetryDelayMs(failedClones, s.config.loop_wait);
    if (s.now < at) {
      return {
        verdict: `waiting ${Math.ceil((at - s.now) / 1000)} s before cloning again: ${failedClones} failed clone(s): ${lastError ?? 'unknown error'}`,
        actions: [{ type: 'wakeAt', at }],
      };
    }
  }
  return { verdict, actions: [{ type: 'clone', source }] };
}

/** A running member tagged `clonefrom` (of this node's site first), else the leader (clone-source.ts). */
function cloneSource(s: HaSnapshot, leaderName: string): UpstreamNode | null {
  const members = s.cluster!.members;
  return (
    upstreamOf(cloneMember(members, s.local.name, leaderName, s.local.site)) ??
    upstreamOf(members.find((m) => m.name === leaderName))
  );
}

export function continueBootstrap(s: HaSnapshot, pgIsPrimary: boolean): Decision {
  const { local } = s;
  if (
    local.pgState === 'initdb_failed' ||
    local.pgState === 'start_failed' ||
    local.pgState === 'custom_bootstrap_failed'
  ) {
    return {
      verdict: `removing initialize key after failed attempt to bootstrap the cluster: ${local.lastError ?? local.pgState}`,
      actions: [{ type: 'abandonBootstrap' }],
    };
  }
  if (local.pgState === 'stopped')
    return { verdict: 'starting primary after bootstrap', actions: [{ type: 'startPrimary' }] };
  if (!pgIsPrimary) return { verdict: 'waiting for end of recovery after bootstrap', actions: [] };
  return { verdict: 'initialized a new cluster', actions: [{ type: 'finishBootstrap' }] };
}
