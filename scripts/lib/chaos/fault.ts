import type { LocalCluster, LocalNode } from '../local-cluster';
import type { NetnsLab } from '../netns-lab';

/**
 * The faults of `npm run chaos`. Each one is injected on a healthy cluster and ends by undoing what
 * an operator's supervisor would undo (a killed agent is started again after 1 s, as systemd's
 * `Restart=` does; a stopped process gets SIGCONT); the cluster must heal the rest by itself.
 */
export interface Fault {
  name: string;
  /** The agents must run under libfaketime (wall-clock.ts) for this fault. */
  needsFakeTime?: boolean;
  /** Every node's WAL must be on a volume of its own (wal-volumes.ts; root only). */
  needsWalVolumes?: boolean;
  /** A network fault: runs only in the network-namespace bed (netns-lab.ts; root only). */
  needsNetns?: boolean;
  /** Left out of a schedule unless named with `--faults`: a fault whose outcome is a documented exception. */
  optIn?: boolean;
  inject(cluster: LocalCluster, leader: LocalNode, ttlSeconds: number, bed: FaultBed): Promise<void>;
}

/** Where the cluster runs: loopback (`lab` null) or the network-namespace lab; and the run's timings a fault may need. */
export interface FaultBed {
  lab: NetnsLab | null;
  retryTimeoutSeconds: number;
}
