import { applyAction, enabledActions } from '../../../src/model-check/actions';
import { boundsFor } from '../../../src/model-check/bounds';
import { ClusterModel, NODE_NAMES, ReplicationMode, stateKey } from '../../../src/model-check/model';
import { Action, Bounds } from '../../../src/model-check/model-types';
import { breadthFirst, steadyStart } from '../../../src/model-check/search';
import { canonicalKey, renameNodes } from '../../../src/model-check/symmetry';

const SWAP_N2_N3 = [0, 2, 1];
const SWAP_N1_N2 = [1, 0, 2];
const ROTATE = [1, 2, 0];

function take(c: ClusterModel, bounds: Bounds, ...labels: string[]): ClusterModel {
  for (const label of labels) {
    const action = enabledActions(c, bounds).find((a) => a.label === label);
    if (!action) throw new Error(`${label} is not possible here`);
    c = applyAction(c, action, bounds).next;
  }
  return c;
}

/** Equal after renaming but for which standbys `/sync` and `synchronous_standby_names` name. */
function sameButForStandbys(a: ClusterModel, b: ClusterModel): boolean {
  const blank = (c: ClusterModel): ClusterModel => ({
    ...c,
    sync: c.sync && { ...c.sync, standbys: [] },
    nodes: c.nodes.map((n) => ({ ...n, standbyNames: n.standbyNames ? '*' : '' })),
  });
  return canonicalKey(blank(a)) === canonicalKey(blank(b));
}

/** The same step taken by the renamed node. */
const renamedAction = (a: Action, p: readonly number[]): Action =>
  a.node < 0 ? a : { kind: a.kind, node: p[a.node], label: `${a.kind} ${NODE_NAMES[p[a.node]]}` };

describe('symmetry reduction over node names', () => {
  const bounds = boundsFor('on', 2, 1, 3, 1);
  const start = steadyStart('on', bounds);

  it('gives a state and its renamings one key, and states that are not renamings of each other different keys', () => {
    // A write that reached n2 but not n3: n2 becomes the synchronous standby, n3 does not.
    const n2Ahead = take(start, bounds, 'write n1', 'ship n2', 'cycle n1');
    const renamed = renameNodes(n2Ahead, SWAP_N2_N3);
    expect(stateKey(renamed)).not.toBe(stateKey(n2Ahead));
    expect(renamed.nodes[2].wal).toBe(1);
    expect(renamed.nodes[0].standbyNames).toBe(n2Ahead.nodes[0].standbyNames.replace('n2', 'n3'));
    expect(canonicalKey(renamed)).toBe(canonicalKey(n2Ahead));
    expect(canonicalKey(renameNodes(n2Ahead, ROTATE))).toBe(canonicalKey(n2Ahead));
    // The leader ahead of both replicas is another state than a replica ahead of the leader's standby.
    const leaderAhead = take(start, bounds, 'write n1', 'cycle n1');
    expect(canonicalKey(leaderAhead)).not.toBe(canonicalKey(n2Ahead));
    // Asynchronous: n2 and n3 are alike (in `on` mode the start names n2 the synchronous standby).
    const asyncBounds = boundsFor('off', 2, 1, 3, 1);
    const asyncStart = steadyStart('off', asyncBounds);
    const taggedReplica = take(asyncStart, asyncBounds, 'noFailover n2');
    const taggedLeader = take(asyncStart, asyncBounds, 'noFailover n1');
    expect(canonicalKey(taggedReplica)).toBe(canonicalKey(take(asyncStart, asyncBounds, 'noFailover n3')));
    expect(canonicalKey(taggedReplica)).not.toBe(canonicalKey(taggedLeader));
  });

  it('renames a stale read a node holds, and keeps sites: only nodes of the same site are interchangeable', () => {
    const stale = take(start, bounds, 'read n2', 'agentCrash n1');
    const renamed = renameNodes(stale, ROTATE);
    expect(JSON.parse(renamed.nodes[2].view!).leaderKey).toBe(1);
    expect(canonicalKey(renamed)).toBe(canonicalKey(stale));
    const sited = { ...start, siteRule: 1 };
    // n1 and n2 are in dc1, n3 in dc2.
    const n2Frozen = take(sited, bounds, 'agentFreeze n2');
    expect(canonicalKey(take(sited, bounds, 'agentFreeze n3'))).not.toBe(canonicalKey(n2Frozen));
    expect(canonicalKey(renameNodes(n2Frozen, SWAP_N1_N2))).toBe(canonicalKey(n2Frozen));
    expect(canonicalKey(renameNodes(n2Frozen, SWAP_N2_N3))).not.toBe(canonicalKey(n2Frozen));
  });

  /**
   * The reduction is exact where the decision code does not look at names. It does in one place the
   * model reaches: a leader choosing its synchronous standbys among equals takes them in name order
   * (sync-candidates.ts keeps the members' order, the reference sorts by name too), so a renamed
   * state may choose the other one. Every other step must commute with renaming.
   */
  it.each<[ReplicationMode, string]>([
    ['off', ''],
    ['on', ''],
    ['quorum', ''],
    ['off', ', failsafe mode and watchdog faults on'],
  ])(
    'in %s mode%s a step and the renamed step from the renamed state reach renamings of one state, but for ties broken by name',
    (mode, extra) => {
      const b = { ...boundsFor(mode, 2, 1, 3, 1), ...(extra ? { failsafe: true, watchdog: true } : {}) };
      let level = [steadyStart(mode, b)];
      const seen = new Set(level.map(canonicalKey));
      const broken: string[] = [];
      for (let depth = 0; depth < 2; depth++) {
        const next: ClusterModel[] = [];
        for (const c of level) {
          for (const action of enabledActions(c, b)) {
            const after = applyAction(c, action, b).next;
            for (const p of [SWAP_N2_N3, ROTATE]) {
              const mirrored = applyAction(renameNodes(c, p), renamedAction(action, p), b).next;
              if (canonicalKey(mirrored) === canonicalKey(after)) continue;
              const tieBrokenByName = action.kind === 'cycle' && action.node === c.leaderKey && c.mode !== 'off';
              if (!tieBrokenByName || !sameButForStandbys(after, mirrored))
                broken.push(`${action.label} from ${stateKey(c)}`);
            }
            const key = canonicalKey(after);
            if (seen.has(key)) continue;
            seen.add(key);
            next.push(after);
          }
        }
        level = next;
      }
      expect(broken).toEqual([]);
    },
  );

  it('searches fewer states for the same depth', () => {
    const reduced = breadthFirst({ mode: 'off', bounds, maxDepth: 2, maxStates: 1e6, progressEvery: 0 });
    const full = breadthFirst({ mode: 'off', bounds, maxDepth: 2, maxStates: 1e6, progressEvery: 0, symmetry: false });
    expect(reduced.violation).toBeNull();
    expect(reduced.states).toBeLessThan(full.states * 0.7);
  });
});
