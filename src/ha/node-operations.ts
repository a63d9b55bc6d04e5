import { TimerClock } from '../common/clock';
import { effectiveDynamicConfig, validateDynamicConfigKeys } from '../config/dynamic-config';
import { ClusterView, Dcs, DynamicConfig, FailoverRequest, Member } from '../dcs/dcs.port';
import { cloneMember } from './clone-source';
import { configChange } from './config-change';
import { isNoFailover, upstreamOf } from './cluster-snapshot';
import { HaNode } from './ha-node';
import {
  ConfigAnswer,
  ConfigWrite,
  OperationAnswer,
  OperationRefused,
  ReinitializeRequest,
  RestartRequest,
  SwitchoverRequest,
} from './operation-types';
import { restartFilterMismatch } from './scheduled-restart';
import { syncNames } from './sync/sync-key';
import { FailsafeCall } from './failsafe/failsafe-caller';

/**
 * The operations of the node API (switchover, failover, restart, reload, reinitialize, dynamic
 * configuration). Requests are validated first; cluster state is read fresh from the DCS; the
 * work itself goes to the HA node, whose machines carry it out and record it.
 */
export class NodeOperations {
  constructor(
    private readonly node: HaNode,
    private readonly dcs: Dcs,
    private readonly clock: TimerClock,
    private readonly warn: (message: string) => void = () => undefined,
  ) {}

  /** What the API needs to parse a request: the pause flag and the time. */
  requestContext(): { paused: boolean; now: number } {
    return { paused: this.node.view().config.pause, now: this.clock.now() };
  }

  /** POST /switchover and POST /failover (reference 1.7). */
  async switchover(request: SwitchoverRequest, path: 'switchover' | 'failover'): Promise<OperationAnswer> {
    const view = this.node.view();
    const cluster = await this.readCluster();
    const misplaced = candidateOutsideSite(request, cluster);
    if (misplaced) throw new OperationRefused(412, misplaced);
    if (!request.scheduledAt) {
      const problem = await this.infeasibility(request, cluster);
      if (problem) throw new OperationRefused(412, problem);
    }
    const value: FailoverRequest = {};
    if (request.leader) value.leader = request.leader;
    if (request.candidate) value.member = request.candidate;
    if (request.scheduledAt) value.scheduled_at = request.scheduledAt.text;
    if (request.site && !request.candidate) value.site = request.site;
    const written = await this.dcs.setFailover(value).catch(() => false);
    if (!written) throw new OperationRefused(503, 'failed to write failover key into DCS');
    this.node.recordCluster(
      request.scheduledAt ? 'switchover.scheduled' : `${request.kind}.requested`,
      `POST /${path}`,
      { ...value },
    );
    if (request.scheduledAt) {
      await this.settle();
      return { status: 202, text: 'Switchover scheduled' };
    }
    this.node.wake();
    return this.awaitNewLeader(request, cluster.leader?.value ?? null, view.config.loop_wait);
  }

  /** DELETE /switchover: removes a scheduled switchover with compare-and-set. */
  async cancelSwitchover(): Promise<OperationAnswer> {
    const cluster = await this.readCluster();
    const failover = cluster.failover;
    if (!failover?.value.scheduled_at) return { status: 404, text: 'no switchover is scheduled' };
    const deleted = await this.dcs.setFailover({}, failover.modRevision).catch(() => false);
    if (!deleted)
      return { status: 409, text: 'the scheduled switchover changed while it was being deleted; read it again' };
    this.node.recordCluster('switchover.cancelled', 'DELETE /switchover', { ...failover.value });
    await this.settle();
    return { status: 200, text: 'scheduled switchover deleted' };
  }

  /** POST /restart: now (waiting for the outcome) or at `schedule` (reference 1.8). */
  async restart(request: RestartRequest): Promise<OperationAnswer> {
    const view = this.node.view();
    if (request.schedule) {
      const scheduled = this.node.scheduleRestart({
        at: request.schedule.at,
        schedule: request.schedule.text,
        role: request.role,
        postgres_version: request.postgres_version,
        restart_pending: request.restart_pending,
        timeout: request.timeout,
        postmasterStartTime: view.sample?.postmasterStartTime ?? null,
      });
      return scheduled
        ? { status: 202, text: 'Restart scheduled' }
        : { status: 409, text: 'Another restart is already scheduled' };
    }
    if (restartFilterMismatch(request, view)) return { status: 503, text: 'restart conditions are not satisfied' };
    if (view.activity) return { status: 503, text: `${view.activity} already in progress` };
    const outcome = await this.node.restartNow(request.timeout);
    return outcome === 'restarted'
      ? { status: 200, text: 'restarted successfully' }
      : { status: 503, text: 'restart failed' };
  }

  /** DELETE /restart. */
  cancelRestart(): OperationAnswer {
    return this.node.cancelScheduledRestart()
      ? { status: 200, text: 'scheduled restart deleted' }
      : { status: 404, text: 'no restarts are scheduled' };
  }

  /** POST /reload: the file is read again at the next cycle, as on SIGHUP (the loop is not woken). */
  reload(): OperationAnswer {
    this.node.requestReload();
    return { status: 202, text: 'reload scheduled' };
  }

  /**
   * POST /failsafe (reference `update_failsafe`): a leader that cannot reach the DCS asks this member
   * to accept it. A running primary refuses (two leaders cannot both be accepted); otherwise the
   * member remembers the leader and does not race for the lock for a ttl.
   */
  acceptFailsafe(call: FailsafeCall): OperationAnswer {
    return this.node.acceptFailsafe(call);
  }

  /** POST /reinitialize: replicas only; a new clone from the leader (reference 1.9). */
  async reinitialize({ force, fromLeader }: ReinitializeRequest): Promise<OperationAnswer> {
    const cluster = await this.readCluster();
    const leader = cluster.leader?.value;
    if (!leader) return { status: 503, text: 'Cluster has no leader, can not reinitialize' };
    const view = this.node.view();
    if (leader === view.name) return { status: 503, text: 'I am the leader, can not reinitialize' };
    // No retry loop exists to interrupt: `force` cannot cut a running action short, so both wait for it.
    if (view.activity)
      return {
        status: 503,
        text: `${view.activity} already in progress${force ? '; try again when it has ended' : ''}`,
      };
    const leaderMember = cluster.members.find((m) => m.name === leader);
    const source = upstreamOf(
      fromLeader ? leaderMember : (cloneMember(cluster.members, view.name, leader, view.site) ?? leaderMember),
    );
    if (!source) return { status: 503, text: `leader ${leader} has no member key to clone from` };
    this.node.recordCluster('node.reinitialize', 'POST /reinitialize', { node: view.name, source: source.name });
    this.node.startReinitialize(source);
    return { status: 200, text: 'reinitialize started' };
  }

  /** PATCH /config: deep merge (`null` removes), typed validation, compare-and-set (reference 1.6). */
  async patchConfig({ document: patch, warnings }: ConfigWrite): Promise<ConfigAnswer> {
    const cluster = await this.readCluster();
    if (!cluster.config) return jsonError(503, 'the DCS holds no configuration yet');
    return this.writeConfig(cluster.config, mergeConfig(cluster.config.value, patch), 'PATCH /config', warnings);
  }

  /** PUT /config: replaces the whole configuration, with the same checks and compare-and-set as PATCH. */
  async putConfig({ document: replacement, warnings }: ConfigWrite): Promise<ConfigAnswer> {
    const cluster = await this.readCluster();
    return this.writeConfig(cluster.config, replacement, 'PUT /config', warnings);
  }

  /** Validates the resulting document and writes it only if the configuration read is still the stored one. */
  private async writeConfig(
    current: ClusterView['config'],
    next: DynamicConfig,
    cause: string,
    warnings: string[],
  ): Promise<ConfigAnswer> {
    const problems = validateDynamicConfigKeys(next);
    if (problems.length > 0) return jsonError(400, problems.join('; '), problems);
    // As the reference, timings that break loop_wait + 2*retry_timeout <= ttl are stored and clamped where they act.
    warnings = [
      ...warnings,
      ...effectiveDynamicConfig(next, {}).adjustments.map((adjustment) => `${adjustment} (the stored value is kept)`),
    ];
    const change = configChange(current?.value ?? {}, next);
    if (change) {
      // With no stored configuration, a PUT may only create it: it cannot overwrite a concurrent first write.
      const written = await this.dcs.setConfig(next, current?.modRevision ?? 'absent').catch(() => false);
      if (!written) return jsonError(409, 'the configuration changed concurrently; read it again and retry');
      this.node.recordCluster('config.changed', cause, { ...change });
      const pauseBefore = Boolean(current?.value.pause);
      if (pauseBefore !== Boolean(next.pause))
        this.node.recordCluster(next.pause ? 'cluster.paused' : 'cluster.resumed', cause);
    }
    for (const warning of warnings) this.warn(`${cause}: ${warning}`);
    await this.settle();
    return { status: 200, body: next, warnings };
  }

  private async readCluster(): Promise<ClusterView> {
    try {
      return await this.node.refreshClusterView();
    } catch {
      throw new OperationRefused(503, 'DCS is not accessible');
    }
  }

  /** After a write: the HA loop applies it at once, and reads after this answer see it. */
  private async settle(): Promise<void> {
    this.node.wake();
    await this.node.refreshClusterView().catch(() => undefined);
  }

  /** Why a switchover or failover cannot run now (reference 1.7 row 7), or null. */
  private async infeasibility(request: SwitchoverRequest, cluster: ClusterView): Promise<string | null> {
    const action = request.kind;
    const leader = cluster.leader?.value ?? null;
    if (request.leader && request.leader !== leader) return 'leader name does not match';
    let pool: Member[];
    // Priority synchronous mode: a switchover goes only to a standby `/sync` names (spec 4.8 rule 6).
    const syncOnly = this.node.view().config.synchronous_mode === 'on';
    const sync = cluster.sync?.value;
    if (request.candidate) {
      if (action === 'switchover' && syncOnly && !syncNames(sync, request.candidate))
        return 'candidate name does not match with sync_standby';
      const candidate = cluster.members.find((m) => m.name === request.candidate);
      if (!candidate) return 'candidate does not exists';
      pool = [candidate];
    } else {
      // A site narrows the members first, as Patroni's branch: then the sync and leader rules apply within it.
      const members = request.site ? cluster.members.filter((m) => m.data.site === request.site) : cluster.members;
      if (request.site && members.length === 0)
        return `${action} is not possible: can not find members in site ${request.site}`;
      if (syncOnly) {
        pool = members.filter((m) => syncNames(sync, m.name));
        if (pool.length === 0) return `${action} is not possible: can not find sync_standby`;
      } else {
        pool = members.filter((m) => m.name !== leader && m.data.api_url);
        if (pool.length === 0) return `${action} is not possible: cluster does not have members except leader`;
      }
    }
    const readings = await Promise.all(pool.map((m) => this.node.probePeer(m.name, m.data.api_url)));
    if (!readings.some((r) => r.reachable && !isNoFailover(r.tags)))
      return `${action} is not possible: no good candidates have been found`;
    return null;
  }

  /**
   * Answers as soon as the DCS shows the outcome: a new leader (200), the request dropped (503), or
   * nothing after 2·max(10, loop_wait) rounds of "wait 1 s, read the DCS" (reference 1.7: rounds, not
   * seconds, so an etcd slow to answer, as in a fleet's switchover storm, lengthens the wait as it does
   * the reference's). The watch answers early.
   */
  private async awaitNewLeader(
    request: SwitchoverRequest,
    oldLeader: string | null,
    loopWait: number,
  ): Promise<OperationAnswer> {
    const rounds = 2 * Math.max(10, loopWait);
    const [verb, past] = request.kind === 'failover' ? ['Failover', 'failed over'] : ['Switchover', 'switched over'];
    const outcome = (cluster: ClusterView | null): OperationAnswer | null => {
      if (!cluster) return null;
      const leader = cluster.leader?.value;
      if (leader && leader !== oldLeader) {
        const asked = request.candidate;
        return {
          status: 200,
          text:
            !asked || asked === leader
              ? `Successfully ${past} to "${leader}"`
              : `${capitalize(past)} to "${leader}" instead of "${asked}"`,
        };
      }
      const failover = cluster.failover?.value;
      if (!failover || (!failover.leader && !failover.member && !failover.site))
        return { status: 503, text: `${verb} failed` };
      return null;
    };
    let answered: ((answer: OperationAnswer) => void) | null = null;
    const early = new Promise<OperationAnswer>((resolve) => (answered = resolve));
    const subscription = this.dcs.changes().subscribe((change) => {
      if (change.key !== null && change.key !== 'leader' && change.key !== 'failover') return;
      void this.dcs
        .read()
        .catch(() => null)
        .then((cluster) => {
          const answer = outcome(cluster);
          if (answer) answered?.(answer);
        });
    });
    let done = false;
    const polled = (async (): Promise<OperationAnswer> => {
      for (let round = 0; round < rounds && !done; round++) {
        await new Promise<void>((resolve) => this.clock.setTimer(resolve, 1000));
        const answer = outcome(done ? null : await this.dcs.read().catch(() => null));
        if (answer) return answer;
      }
      return {
        status: 503,
        text: `${verb} status unknown after ${rounds} seconds; operation may still be in progress`,
      };
    })();
    try {
      return await Promise.race([polled, early]);
    } finally {
      done = true;
      subscription.unsubscribe();
    }
  }
}

/** A candidate named together with a site must be of that site (Patroni's branch ignores the site then; a mismatch is refused here). */
function candidateOutsideSite(request: SwitchoverRequest, cluster: ClusterView): string | null {
  if (!request.site || !request.candidate) return null;
  const candidate = cluster.members.find((m) => m.name === request.candidate);
  if (!candidate || candidate.data.site === request.site) return null;
  return `site: candidate ${request.candidate} is not in site ${request.site} (its site: ${candidate.data.site ?? 'not set'})`;
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

const STATUS_NAMES: Record<number, string> = { 400: 'Bad Request', 409: 'Conflict', 503: 'Service Unavailable' };

function jsonError(status: number, message: string, problems?: string[]): ConfigAnswer {
  return {
    status,
    body: { error: STATUS_NAMES[status], message, ...(problems ? { problems } : {}), statusCode: status },
  };
}

/** The reference's merge: `null` deletes, objects merge recursively, anything else replaces. */
export function mergeConfig(current: DynamicConfig, patch: Record<string, unknown>): DynamicConfig {
  const merged: Record<string, unknown> = { ...current };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete merged[key];
    else if (isPlainObject(value) && isPlainObject(merged[key]))
      merged[key] = mergeConfig(merged[key] as DynamicConfig, value);
    else merged[key] = value;
  }
  return merged as DynamicConfig;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
