/**
 * Symmetry reduction over node names (issue 34, part 4): states that differ only by which node is
 * called n1, n2 or n3 are one state to the exhaustive search. A state's key is the least of the keys of
 * its renamings, so the search expands one state of each class. Nothing but the members' sites ties a
 * role to a name (which node leads, streams, is tagged or frozen is part of the state and moves with
 * the node), so a search with sites permutes only nodes of the same site. Why it is sound, and where
 * the decision code breaks ties by name: docs/chaos-and-safety.md, "Symmetry reduction".
 */
import { ClusterModel, cloneNode, DcsRead, NODE_NAMES, NodeModel, stateKey } from './model';
import { MODEL_SITES } from './site-rule';

type Permutation = readonly number[];

/** Every permutation of the three nodes: perm[i] is the index node i takes. */
const ALL: readonly Permutation[] = [
  [0, 1, 2],
  [0, 2, 1],
  [1, 0, 2],
  [1, 2, 0],
  [2, 0, 1],
  [2, 1, 0],
];

const renameIndex = (p: Permutation, i: number) => (i >= 0 ? p[i] : i);

/** A set of nodes as a mask of indexes (`/failsafe`): each bit follows its node. */
function renameMask(p: Permutation, mask: number): number {
  let out = 0;
  for (let i = 0; i < p.length; i++) if (mask & (1 << i)) out |= 1 << p[i];
  return out;
}

/** Member names written in a setting (`synchronous_standby_names`) follow their nodes; the order written stays. */
function renameNames(p: Permutation, text: string): string {
  if (text === '') return text;
  return text.replace(/\bn([1-9])\b/g, (_, d: string) => NODE_NAMES[p[Number(d) - 1]]);
}

function reorder<T>(p: Permutation, items: readonly T[]): T[] {
  const out: T[] = new Array(items.length);
  items.forEach((item, i) => (out[p[i]] = item));
  return out;
}

/** Renamed stale reads: a search holds few distinct ones, met again and again. */
const renamedViews = new Map<string, string>();

/** A stale DCS read a node holds names nodes by index too. */
function renameView(p: Permutation, view: string): string {
  const memo = `${p.join('')}${view}`;
  let renamed = renamedViews.get(memo);
  if (renamed === undefined) {
    renamed = renameViewOnce(p, view);
    if (renamedViews.size > 100_000) renamedViews.clear();
    renamedViews.set(memo, renamed);
  }
  return renamed;
}

function renameViewOnce(p: Permutation, view: string): string {
  const read = JSON.parse(view) as DcsRead;
  const renamed: DcsRead = {
    ...read,
    leaderKey: renameIndex(p, read.leaderKey),
    sync: read.sync && {
      leader: renameIndex(p, read.sync.leader),
      standbys: read.sync.standbys.map((j) => p[j]).sort(),
      quorum: read.sync.quorum,
    },
    failover: read.failover && {
      ...read.failover,
      leader: renameIndex(p, read.failover.leader),
      member: renameIndex(p, read.failover.member),
    },
    members: reorder(p, read.members),
    failsafeKey: renameMask(p, read.failsafeKey),
  };
  // Keep the key order JSON.stringify gives the cycle's own reads, so that equal reads stay equal strings.
  return JSON.stringify(Object.fromEntries(Object.keys(read).map((k) => [k, renamed[k as keyof DcsRead]])));
}

/** The same cluster with node i called NODE_NAMES[p[i]]: every index and name in the state follows. */
export function renameNodes(c: ClusterModel, p: Permutation): ClusterModel {
  const node = (n: NodeModel): NodeModel => {
    const renamed = cloneNode(n);
    renamed.upstream = renameIndex(p, n.upstream);
    renamed.opUpstream = renameIndex(p, n.opUpstream);
    renamed.standbyNames = renameNames(p, n.standbyNames);
    renamed.view = n.view && renameView(p, n.view);
    renamed.knownFailsafe = renameMask(p, n.knownFailsafe);
    renamed.acceptedLeader = renameIndex(p, n.acceptedLeader);
    return renamed;
  };
  return {
    ...c,
    nodes: reorder(p, c.nodes.map(node)),
    leaderKey: renameIndex(p, c.leaderKey),
    failsafeKey: renameMask(p, c.failsafeKey),
    // `/sync` holds a set of standbys: the model keeps it sorted, as the code writes it.
    sync: c.sync && {
      leader: renameIndex(p, c.sync.leader),
      standbys: c.sync.standbys.map((j) => p[j]).sort(),
      quorum: c.sync.quorum,
    },
    failover: c.failover && {
      ...c.failover,
      leader: renameIndex(p, c.failover.leader),
      member: renameIndex(p, c.failover.member),
    },
  };
}

/**
 * What node i is, told without any index: its own fields and the roles the cluster gives it. Equal
 * under every renaming; the nodes are put in the order of these, so only ties need comparing keys.
 */
function signature(c: ClusterModel, i: number): string {
  const n = c.nodes[i];
  const m = n.member
    ? `${n.member.running ? 1 : 0}${n.member.primary ? 1 : 0}.${n.member.wal}.${n.member.timeline}.${n.memberLease}`
    : 'x';
  const roles = `${c.leaderKey === i ? 'K' : ''}${c.sync?.leader === i ? 'L' : ''}${c.sync?.standbys.includes(i) ? 'S' : ''}${c.failover?.leader === i ? 'F' : ''}${c.failover?.member === i ? 'M' : ''}`;
  const flags = `${n.waking ? 'w' : ''}${n.cycled ? 'c' : ''}${n.primary ? 'p' : ''}${n.opAsPrimary ? 'a' : ''}${n.opRestart ? 'r' : ''}${n.leader ? 'l' : ''}${n.dcsCut ? 'x' : ''}${n.noFailover ? 'n' : ''}${n.fenceDead ? 'k' : ''}${n.fenceLate ? 'z' : ''}${n.upstream < 0 ? '-' : '+'}${n.view ? 'v' : ''}${n.peerCut ? 'y' : ''}${n.watchdogFailed ? 'W' : ''}${n.noSync ? 'N' : ''}`;
  const failsafe = `${(c.failsafeKey >> i) & 1}${n.knownFailsafe ? bitCount(n.knownFailsafe) : ''}${n.acceptedLeft ? `A${n.acceptedLeft}${n.acceptedLeader === i ? 's' : ''}` : ''}`;
  return `${c.siteRule ? MODEL_SITES[i] : ''},${n.agent},${n.pg},${n.op},${n.role},${flags},${n.priority},${n.wal},${n.timeline},${n.lease},${n.fence},${m},${roles},${failsafe}`;
}

const bitCount = (mask: number) => (mask & 1) + ((mask >> 1) & 1) + ((mask >> 2) & 1);

/**
 * The key of a state's class under renaming: the least key among the renamings that put the nodes in
 * the order of their signatures (with sites, the sites' order is the first criterion, so only
 * renamings that keep each node's site are taken).
 */
export function canonicalKey(c: ClusterModel): string {
  const signatures = c.nodes.map((_, i) => signature(c, i));
  const [a, b, d] = signatures;
  // All different (the common case): the one renaming that sorts them.
  if (a !== b && b !== d && a !== d) {
    // Each node's place in the order of the signatures (all different): the renaming that sorts them.
    const p = [(a > b ? 1 : 0) + (a > d ? 1 : 0), (b > a ? 1 : 0) + (b > d ? 1 : 0), (d > a ? 1 : 0) + (d > b ? 1 : 0)];
    return p[0] === 0 && p[1] === 1 ? stateKey(c) : stateKey(renameNodes(c, p));
  }
  let least: string | null = null;
  for (const p of ALL) {
    const at: number[] = [];
    p.forEach((to, from) => (at[to] = from));
    if (!at.every((from, k) => k === 0 || signatures[at[k - 1]] <= signatures[from])) continue;
    const key = p === ALL[0] ? stateKey(c) : stateKey(renameNodes(c, p));
    if (least === null || key < least) least = key;
  }
  return least!;
}
