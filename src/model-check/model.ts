/**
 * The model checker's abstract cluster: a compact state, small enough to hash by the million.
 * Every time in it is relative to "now" (ms left), so that states differing only in the wall
 * clock are one state; the HA code sees them as instants after a fixed epoch.
 */

export const NODE_NAMES = ['n1', 'n2', 'n3'] as const;
export const LOOP_WAIT_S = 10;
export const RETRY_TIMEOUT_S = 5;
/** In the model a WAL position counts writes: 1 means one write behind. */
export const MAXIMUM_LAG_ON_FAILOVER = 1;
export const SYSTEM_ID = '7000000000000000001';

export type AgentState = 'up' | 'frozen' | 'down';
/**
 * `hung`: the postmaster runs and answers nothing (stopped, or stuck in I/O; fault `pgHang`), taken as already past
 * `postgres_unresponsive_timeout` (15 s, under the ttl): the agent's sampler gets no answer, the server accepts and
 * ships nothing, its agent's status still shows the last reading. Only a kill (the agent's or its fence's) ends it.
 */
export type PgState = 'running' | 'stopped' | 'crashed' | 'hung';
/** The long action in flight: it completes as a step of its own, or hangs (the step never comes). */
export type PgOp = 'none' | 'promote' | 'demote' | 'start' | 'switchover';
export type ModelRole = 'replica' | 'primary' | 'demoted';
export type ReplicationMode = 'off' | 'on' | 'strict' | 'quorum';

/**
 * Settings fixed for a whole search (settings-rules.ts), each as the agent's default when absent: what the
 * mutation run's scenarios turn on one at a time, so that the rules that read them are judged.
 */
export interface ModelSettings {
  /** `check_timeline: true` in `/config`. */
  checkTimeline?: boolean;
  /** `primary_start_timeout` in `/config` (absent: the default, 300). */
  primaryStartTimeout?: number;
  /** The node tagged `nosync` (absent: none). */
  noSync?: number;
  /** `synchronous_mode_strict: true` in quorum mode too (mode `strict` is priority mode's). */
  strictQuorum?: boolean;
  /** synchronous_commit on the primaries (absent: `on`, a standby's write, flush and replay positions one): given, a standby takes WAL in three steps (commit-columns.ts). */
  synchronousCommit?: 'on' | 'remote_write' | 'remote_apply';
  /** A switchover that names no member names this site (`/failover` `site`; members placed in sites: Bounds.siteRule). */
  switchoverSite?: string;
  /** `standby_cluster` in `/config` (a remote primary at `remote:5432`): the whole cluster replicates from it. */
  standbyCluster?: boolean;
}

/** `synchronous_mode_strict` in force: mode `strict`, or quorum mode with the setting's strictQuorum. */
export function strictMode(c: Pick<ClusterModel, 'mode' | 'settings'>): boolean {
  return c.mode === 'strict' || (c.mode === 'quorum' && c.settings?.strictQuorum === true);
}

export interface NodeModel {
  agent: AgentState;
  /** Ran its HA cycle since loop_wait last passed: a running agent cycles every loop_wait. */
  cycled: boolean;
  /** Restarted or thawed, its first HA cycle not yet run: until then it acts as little as a dead one. */
  waking: boolean;
  pg: PgState;
  /** Running out of recovery. */
  primary: boolean;
  op: PgOp;
  /** For `start` and `demote`: start as a primary (else a replica of `opUpstream`, -1 for nobody). */
  opAsPrimary: boolean;
  opUpstream: number;
  /** `demote`: start again afterwards. */
  opRestart: boolean;
  role: ModelRole;
  /** The leadership machine says leader. */
  leader: boolean;
  wal: number;
  /** A standby's WAL written and not yet flushed (write_lsn past `wal`), and flushed and not yet replayed (replay_lsn behind it): 0 unless ModelSettings.synchronousCommit is given (commit-columns.ts). */
  writeAhead: number;
  replayBehind: number;
  timeline: number;
  /** The member this replica streams from, -1 for none. */
  upstream: number;
  /** ms left of the lease this node last got for the leader key (0: none or expired). */
  lease: number;
  /**
   * ms left before the fence stops the postmaster (0: the deadline passed); -1 when disarmed. The agent
   * remembers it for the next postmaster it starts, whose fence starts armed with it.
   */
  fence: number;
  /** The fence of the running postmaster died (killed): the postmaster survives it, nothing stops it at the deadline. A new postmaster has a new fence. */
  fenceDead: boolean;
  /** The fence's deadline arrives loop_wait late (clock drift between the agent and the etcd leader's lease, a delayed keep-alive answer): past the lease's end. */
  fenceLate: boolean;
  /** Cut off from the DCS. */
  dcsCut: boolean;
  /** Cut off from the other nodes (their APIs: probes and failsafe calls fail both ways), not from the DCS. */
  peerCut: boolean;
  /** Watchdog mode `required` and the device cannot be activated (`watchdog_failed`): no candidate, no leader. */
  watchdogFailed: boolean;
  /** `/failsafe` as this node last read it (a mask of node indexes, 0: none); forgotten when the agent dies. */
  knownFailsafe: number;
  /** The failsafe leader whose call this node accepted (-1: none) and ms left of that acceptance (a ttl from the call). */
  acceptedLeader: number;
  acceptedLeft: number;
  noFailover: boolean;
  /** The `nosync` tag: never a synchronous standby (ModelSettings.noSync). */
  noSync: boolean;
  /** The `failover_priority` tag (1, the default, or 2). */
  priority: number;
  /** synchronous_standby_names in force. */
  standbyNames: string;
  /** The member key as last written: null once its lease ran out. */
  member: MemberKey | null;
  memberLease: number;
  /** A DCS read this node took and has not yet decided on (JSON of a DcsRead): its next cycle decides on it. */
  view: string | null;
}

export type MemberKey = { running: boolean; primary: boolean; wal: number; timeline: number };

/** What a node reads from the DCS: decided on later, the read is stale. */
export type DcsRead = Pick<
  ClusterModel,
  'leaderKey' | 'sync' | 'failover' | 'optime' | 'currentSite' | 'history' | 'pause' | 'mode' | 'ttl' | 'failsafeKey'
> & {
  members: (MemberKey | null)[];
};

export interface FailoverModel {
  leader: number;
  member: number;
  /** ms until a scheduled switchover is due; null for now. */
  dueIn: number | null;
}

export interface ClusterModel {
  nodes: NodeModel[];
  /** Holder of the leader key, -1 for none. */
  leaderKey: number;
  /** ms left of the key's lease in the DCS: it counts down only while the DCS has its quorum. */
  keyLease: number;
  quorum: boolean;
  /** `/sync`: its leader, standbys and (quorum mode) quorum. */
  sync: { leader: number; standbys: number[]; quorum: number } | null;
  failover: FailoverModel | null;
  optime: number;
  /** `/status` `current_site`: the site of the leader that last wrote `/status` (members have sites only with siteRule). */
  currentSite?: string;
  /** `/history`: [timeline, switch position]. */
  history: [number, number][];
  pause: boolean;
  mode: ReplicationMode;
  ttl: number;
  /** `failsafe_mode` in `/config`: the same in every state of a search. */
  failsafe: boolean;
  /** `/failsafe`: the members a leader must reach while the DCS is down (a mask of node indexes, 0: no key). */
  failsafeKey: number;
  /** The fences exist (false: the model of decide() alone, every node run without its fence). */
  fenceLayer: boolean;
  /** The last acknowledged commit, on its timeline, and whether a synchronous mode was in force then; null before the first. */
  acked: { timeline: number; wal: number; sync: boolean } | null;
  /** `synchronous_site_count` (site-rule.ts), with the members placed in sites; absent: 0, no sites. The same in every state of a search. */
  siteRule?: number;
  /** Settings fixed for the search (absent: every default). */
  settings?: ModelSettings;
  /** Budgets spent, part of the state so that bounded searches stay sound. */
  faults: number;
  operations: number;
  writes: number;
  staleReads: number;
}

export function initialNode(index: number): NodeModel {
  const primary = index === 0;
  return {
    agent: 'up',
    cycled: false,
    waking: false,
    pg: 'running',
    primary,
    op: 'none',
    opAsPrimary: false,
    opUpstream: -1,
    opRestart: false,
    role: primary ? 'primary' : 'replica',
    leader: primary,
    wal: 0,
    writeAhead: 0,
    replayBehind: 0,
    timeline: 1,
    upstream: primary ? -1 : 0,
    lease: primary ? 30_000 : 0,
    fence: -1,
    fenceDead: false,
    fenceLate: false,
    dcsCut: false,
    peerCut: false,
    watchdogFailed: false,
    knownFailsafe: 0,
    acceptedLeader: -1,
    acceptedLeft: 0,
    noFailover: false,
    noSync: false,
    priority: 1,
    standbyNames: '',
    member: { running: true, primary, wal: 0, timeline: 1 },
    memberLease: 30_000,
    view: null,
  };
}

/** n1 has just become primary and holds the key; n2 and n3 stream from it. */
export function bootstrappedCluster(mode: ReplicationMode, fenceLayer = true): ClusterModel {
  return {
    nodes: NODE_NAMES.map((_, i) => initialNode(i)),
    leaderKey: 0,
    keyLease: 30_000,
    quorum: true,
    sync: null,
    failover: null,
    optime: 0,
    history: [],
    pause: false,
    mode,
    ttl: 30,
    failsafe: false,
    failsafeKey: 0,
    fenceLayer,
    acked: null,
    faults: 0,
    operations: 0,
    writes: 0,
    staleReads: 0,
  };
}

/** A node copied field by field: a literal of one shape is far cheaper than a spread (the search clones millions). */
export function cloneNode(n: NodeModel): NodeModel {
  const m = n.member;
  return {
    agent: n.agent,
    cycled: n.cycled,
    waking: n.waking,
    pg: n.pg,
    primary: n.primary,
    op: n.op,
    opAsPrimary: n.opAsPrimary,
    opUpstream: n.opUpstream,
    opRestart: n.opRestart,
    role: n.role,
    leader: n.leader,
    wal: n.wal,
    writeAhead: n.writeAhead,
    replayBehind: n.replayBehind,
    timeline: n.timeline,
    upstream: n.upstream,
    lease: n.lease,
    fence: n.fence,
    fenceDead: n.fenceDead,
    fenceLate: n.fenceLate,
    dcsCut: n.dcsCut,
    peerCut: n.peerCut,
    watchdogFailed: n.watchdogFailed,
    knownFailsafe: n.knownFailsafe,
    acceptedLeader: n.acceptedLeader,
    acceptedLeft: n.acceptedLeft,
    noFailover: n.noFailover,
    noSync: n.noSync,
    priority: n.priority,
    standbyNames: n.standbyNames,
    member: m && { running: m.running, primary: m.primary, wal: m.wal, timeline: m.timeline },
    memberLease: n.memberLease,
    view: n.view,
  };
}

export function cloneCluster(c: ClusterModel): ClusterModel {
  const history: [number, number][] = new Array(c.history.length);
  for (let i = 0; i < history.length; i++) history[i] = [c.history[i][0], c.history[i][1]];
  const next: ClusterModel = {
    nodes: c.nodes.map(cloneNode),
    leaderKey: c.leaderKey,
    keyLease: c.keyLease,
    quorum: c.quorum,
    sync: c.sync && { leader: c.sync.leader, standbys: [...c.sync.standbys], quorum: c.sync.quorum },
    failover: c.failover && { leader: c.failover.leader, member: c.failover.member, dueIn: c.failover.dueIn },
    optime: c.optime,
    history,
    pause: c.pause,
    mode: c.mode,
    ttl: c.ttl,
    failsafe: c.failsafe,
    failsafeKey: c.failsafeKey,
    fenceLayer: c.fenceLayer,
    acked: c.acked && { timeline: c.acked.timeline, wal: c.acked.wal, sync: c.acked.sync },
    faults: c.faults,
    operations: c.operations,
    writes: c.writes,
    staleReads: c.staleReads,
  };
  // The optional fields only where the state has them, as a spread would copy them.
  if ('currentSite' in c) next.currentSite = c.currentSite;
  if ('siteRule' in c) next.siteRule = c.siteRule;
  if ('settings' in c) next.settings = c.settings;
  return next;
}

const AGENT = { up: 'u', frozen: 'f', down: 'd' };
const PG = { running: 'r', stopped: 's', crashed: 'c', hung: 'h' };
const OP = { none: '-', promote: 'p', demote: 'd', start: 's', switchover: 'w' };
const ROLE = { replica: 'R', primary: 'P', demoted: 'D' };

/** One node's part of the key (template literals: the same text as joining the fields with commas, built faster). */
export function nodeKey(n: NodeModel): string {
  const m = n.member
    ? `${n.member.running ? 1 : 0}${n.member.primary ? 1 : 0}.${n.member.wal}.${n.member.timeline}.${n.memberLease}`
    : 'x';
  const flags =
    AGENT[n.agent] +
    (n.waking ? 'w' : '') +
    (n.cycled ? 1 : 0) +
    PG[n.pg] +
    (n.primary ? 1 : 0) +
    OP[n.op] +
    (n.opAsPrimary ? 1 : 0) +
    (n.opRestart ? 1 : 0) +
    ROLE[n.role] +
    (n.leader ? 1 : 0) +
    (n.dcsCut ? 1 : 0) +
    (n.noFailover ? 1 : 0) +
    (n.noSync ? 'N' : '') +
    n.priority +
    (n.fenceDead ? 'k' : '') +
    (n.fenceLate ? 'l' : '') +
    (n.peerCut ? 'x' : '') +
    (n.watchdogFailed ? 'W' : '');
  const failsafe = n.knownFailsafe || n.acceptedLeft ? `${n.knownFailsafe}.${n.acceptedLeader}.${n.acceptedLeft}` : '';
  return `${flags},${n.opUpstream},${n.wal},${n.timeline},${n.upstream},${n.lease},${n.fence},${n.standbyNames},${m},${n.view ?? ''},${failsafe}${n.writeAhead || n.replayBehind ? `,${n.writeAhead}.${n.replayBehind}` : ''}`;
}

/** The cluster's own part of the key, before the nodes'. */
export function headKey(c: ClusterModel): string {
  const sync = c.sync ? `${c.sync.leader}:${c.sync.standbys.join('+')}:${c.sync.quorum}` : '';
  const failover = c.failover ? `${c.failover.leader}>${c.failover.member}@${c.failover.dueIn ?? ''}` : '';
  const acked = c.acked ? `${c.acked.timeline}.${c.acked.wal}${c.acked.sync ? 's' : ''}` : '';
  let history = '';
  for (let i = 0; i < c.history.length; i++) history += `${i > 0 ? '/' : ''}${c.history[i][0]}.${c.history[i][1]}`;
  return `${c.leaderKey},${c.keyLease},${c.quorum ? 1 : 0},${sync},${failover},${c.optime},${c.currentSite ?? ''},${history},${c.pause ? 1 : 0},${c.mode},${c.ttl},${c.fenceLayer ? 'F' : 'f'},${c.failsafe ? `S${c.failsafeKey}` : ''},${acked},${c.faults},${c.operations},${c.writes},${c.staleReads}`;
}

/** The canonical hash key of a state: equal keys, equal futures. */
export function stateKey(c: ClusterModel): string {
  let key = headKey(c);
  for (let i = 0; i < c.nodes.length; i++) key += `|${nodeKey(c.nodes[i])}`;
  return key;
}

/**
 * A commit is on node `n` when n's WAL contains it: on the commit's timeline and far enough, or on
 * another timeline of the history that shares the WAL up to the commit (forked at or after it).
 */
export function holdsCommit(c: ClusterModel, n: NodeModel, commit: { timeline: number; wal: number }): boolean {
  if (n.wal < commit.wal) return false;
  if (n.timeline === commit.timeline) return true;
  const older = Math.min(n.timeline, commit.timeline);
  const fork = c.history.find((h) => h[0] === older);
  return fork !== undefined && fork[1] >= commit.wal;
}

/**
 * Nothing that runs stops node i's postmaster at its lease's end: its agent does not (crashed or
 * frozen, or back but before its first cycle; or the cluster is paused, where the agent leaves
 * PostgreSQL to the operator, as Patroni's maintenance mode) and its fence is gone (killed, late past
 * the lease, or the model runs without fences). The one documented exemption of invariant 1: both
 * layers are gone, and only etcd's lease expiry (the others' promotion) is left, which stops no process.
 */
export function unstoppable(c: ClusterModel, i: number): boolean {
  const n = c.nodes[i];
  return (n.agent !== 'up' || n.waking || c.pause) && (!c.fenceLayer || n.fenceDead || n.fenceLate);
}

/** Node i reaches node j's API (a probe, a failsafe call): j's agent runs and neither is cut off from its peers. */
export function reaches(c: ClusterModel, i: number, j: number): boolean {
  return c.nodes[j].agent === 'up' && !c.nodes[i].peerCut && !c.nodes[j].peerCut;
}

/** Where timeline `tl` starts: the position its parent ended at (0 for the first). */
export function timelineStart(c: ClusterModel, tl: number): number {
  return c.history.find((h) => h[0] === tl - 1)?.[1] ?? 0;
}
