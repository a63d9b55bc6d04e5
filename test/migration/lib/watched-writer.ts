import { join } from 'node:path';
import { AckedWriter } from './acked-writer';
import { LossLedger } from './loss-ledger';
import { MixedCluster } from './mixed-cluster';
import { RoleWatch } from './role-watch';

/**
 * The writer every migration spec runs, started: its table created on the leader, its ledger kept in
 * `baseDir/ledger.log`, and a watch of who holds the lock and which servers take writes logging to that ledger.
 */
export async function startWatchedWriter(
  cluster: MixedCluster,
  baseDir: string,
  leaderPort: number,
): Promise<{ writer: AckedWriter; ledger: LossLedger; watch: RoleWatch }> {
  await AckedWriter.createTable(leaderPort);
  const writer = new AckedWriter(() => cluster.nodes.map((node) => node.pgPort));
  const ledger = new LossLedger(writer, cluster, join(baseDir, 'ledger.log'));
  const watch = new RoleWatch(cluster, (line) => ledger.log(line));
  watch.start();
  writer.start();
  return { writer, ledger, watch };
}
