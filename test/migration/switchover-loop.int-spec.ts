import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { AckedWriter } from './lib/acked-writer';
import { LossLedger } from './lib/loss-ledger';
import { MixedCluster } from './lib/mixed-cluster';
import { MixedNode } from './lib/mixed-node';
import { RoleWatch } from './lib/role-watch';
import { startWatchedWriter } from './lib/watched-writer';
import { swapAgent, switchover } from './migration-steps';

/**
 * The rolling migration's way back, looped (STATOR_SWITCHOVER_LOOPS times): with a writer running, the Stator
 * leader's replicas are swapped to Patroni and it switches over to one of them; then the way forward again to a
 * Stator leader. Every acknowledged write must be on the leader after every switchover.
 */
jest.setTimeout(900_000);

const LOOPS = Number(process.env.STATOR_SWITCHOVER_LOOPS ?? 2);
let baseDir: string;
let cluster: MixedCluster;
let writer: AckedWriter;
let ledger: LossLedger;
let watch: RoleWatch;

async function switchoverTo(candidate: MixedNode, label: string): Promise<void> {
  const old = cluster.node((await cluster.leaderName()) ?? '');
  writer.mark(`${label}: switchover ${old.name} (${old.agent}) -> ${candidate.name} (${candidate.agent})`);
  await switchover(cluster, candidate);
  await ledger.handover(label, old, candidate);
  await ledger.afterStep(label);
}

beforeAll(async () => {
  baseDir = tmpDir('stator-switchover-loop-');
  cluster = await MixedCluster.start(baseDir);
  for (const node of cluster.nodes) node.start('patroni');
  const leader = await cluster.waitForHealthy(120_000, 'the Patroni cluster bootstrapped, every replica streaming');
  ({ writer, ledger, watch } = await startWatchedWriter(cluster, baseDir, leader.pgPort));
  await sleep(500);
  // Every node on Stator, a Stator leader: where the way back starts.
  for (const node of cluster.replicasOf(leader)) await swapAgent(cluster, node, 'stator');
  await switchoverTo(cluster.replicasOf(leader)[0], 'to a Stator leader');
  await swapAgent(cluster, leader, 'stator');
});

afterAll(async () => {
  await writer?.stop();
  await watch?.stop();
  await cluster?.stop();
  const keep = (ledger && ledger.unexplained().length > 0) || process.env.STATOR_MIGRATION_KEEP === '1';
  if (baseDir && !keep) removeDir(baseDir);
  if (ledger)
    process.stdout.write(
      `\nswitchover loop (load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')})${keep ? `, logs kept in ${baseDir}` : ''}:\n${ledger.lines.join('\n')}\n`,
    );
});

it(`loses no acknowledged write in ${LOOPS} rounds of: Stator replicas swapped to Patroni, switchover Stator -> Patroni, and the way forward again`, async () => {
  for (let round = 1; round <= LOOPS; round++) {
    const leader = await cluster.waitForHealthy();
    const [first, second] = cluster.replicasOf(leader);
    for (const node of [first, second]) {
      writer.mark(`round ${round}: swap ${node.name} stator -> patroni`);
      await swapAgent(cluster, node, 'patroni');
    }
    await switchoverTo(first, `round ${round}, the way back`);
    writer.mark(`round ${round}: swap ${second.name} patroni -> stator`);
    await swapAgent(cluster, second, 'stator');
    await switchoverTo(second, `round ${round}, the way forward`);
    for (const node of [first, leader]) {
      if (node.agent === 'stator') continue;
      writer.mark(`round ${round}: swap ${node.name} patroni -> stator`);
      await swapAgent(cluster, node, 'stator');
    }
  }
  await writer.stop();
  expect(await ledger.afterStep('the end')).toBe(true);
  expect(ledger.losses.map((loss) => ledger.describe(loss))).toEqual([]);
  expect(writer.acked.length).toBeGreaterThan(100);
});
