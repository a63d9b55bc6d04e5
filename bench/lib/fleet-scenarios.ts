import { EtcdCluster } from '../../scripts/lib/etcd-cluster';
import { etcdLeaderKill, EtcdLeaderKill } from '../scenarios/etcd-leader-kill';
import { failover, FailoverRun } from '../scenarios/failover';
import { switchoverStorm, SwitchoverStorm } from '../scenarios/fleet-storm';
import { primaries } from './cluster';
import { waitHealthy } from './health';
import { createWriteTable } from './write-probe';
import { Fleet } from './fleet';
import { log, now } from './util';
import { FLEET_SCENARIOS, FleetScenario } from './fleet-options';

/**
 * What the fleet bench does to a running fleet after its measured window and the first failover (issue 35): the
 * leader's agent alone killed, a switchover storm, the etcd leader killed. Each runs even when the one before failed;
 * a failure is kept as text beside a null result.
 */
export interface FleetScenarioResults {
  /** kill -9 of a leader's agent alone (postmaster left running), on fleet-2 (fleet-1 when alone). */
  agentFailover: FailoverRun | null;
  agentFailoverError?: string;
  /** Clusters other than the one failed over whose leader changed meanwhile. */
  agentFailoverOtherLeadersMoved: number;
  storm: SwitchoverStorm | null;
  stormError?: string;
  etcdLeaderKill: EtcdLeaderKill | null;
  etcdLeaderKillError?: string;
  /** Seconds each scenario took, for the duration estimate of longer runs. */
  seconds: { agentFailover: number; storm: number; etcdLeaderKill: number };
}

export async function runFleetScenarios(
  fleet: Fleet,
  etcd: EtcdCluster,
  selected: readonly FleetScenario[] = FLEET_SCENARIOS,
): Promise<FleetScenarioResults> {
  const { ttl } = fleet.clusters[0].timing;
  const target = fleet.clusters[1] ?? fleet.clusters[0];
  const others = fleet.clusters.filter((cluster) => cluster !== target);
  const results: FleetScenarioResults = {
    agentFailover: null,
    agentFailoverOtherLeadersMoved: 0,
    storm: null,
    etcdLeaderKill: null,
    seconds: { agentFailover: 0, storm: 0, etcdLeaderKill: 0 },
  };
  const timed = async <T>(
    name: keyof FleetScenarioResults['seconds'],
    run: () => Promise<T>,
  ): Promise<{ value: T | null; error?: string }> => {
    const started = now();
    try {
      return { value: await run() };
    } catch (error) {
      const message = (error as Error).message;
      log(`${fleet.kind}, ${fleet.clusters.length} clusters: ${name} failed: ${message}`);
      return { value: null, error: message };
    } finally {
      results.seconds[name] = (now() - started) / 1000;
    }
  };

  // A scenario left out of the run stays null without an error: the report says "not run".
  if (selected.includes('agent-failover')) {
    const before = await leaderNames(others);
    const agent = await timed('agentFailover', async () => {
      // The bench's table exists on fleet-1 only so far: the write client needs it on the target too.
      await createWriteTable((await waitHealthy(target, 180_000)).leader.pgPort);
      return failover(target, 'agent');
    });
    results.agentFailover = agent.value;
    if (agent.error) results.agentFailoverError = `failover (agent alone) of ${target.scope}: ${agent.error}`;
    const after = await leaderNames(others);
    results.agentFailoverOtherLeadersMoved = before.filter((name, i) => after[i] !== name).length;
  }

  if (selected.includes('storm')) {
    const storm = await timed('storm', () => switchoverStorm(fleet.clusters, etcd.endpoints[0]));
    results.storm = storm.value;
    if (storm.error) results.stormError = `switchover storm: ${storm.error}`;
  }

  if (selected.includes('etcd-leader-kill')) {
    // Watched for a ttl: a primary that could not renew its leader key through a dead etcd leader would be gone by then.
    const kill = await timed('etcdLeaderKill', () => etcdLeaderKill(fleet.clusters, etcd, ttl * 1000));
    results.etcdLeaderKill = kill.value;
    if (kill.error) results.etcdLeaderKillError = `etcd leader killed: ${kill.error}`;
  }
  return results;
}

/** Each cluster's leader (the one node answering 200 on /primary; '' when not exactly one). */
export async function leaderNames(clusters: Fleet['clusters']): Promise<string[]> {
  return Promise.all(
    clusters.map(async (cluster) => {
      const found = await primaries(cluster, 2000);
      return found.length === 1 ? found[0].name : '';
    }),
  );
}
