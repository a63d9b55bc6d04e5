import { Kind } from './cluster';
import { FleetOptions } from './fleet-options';

/**
 * How long a fleet run takes, besides its settle and window: a fixed part (etcd's start, the failovers, the etcd
 * leader's kill, waiting a ttl each at Patroni's timing) and a part per cluster (starting it, the storm, stopping
 * it), per product. Calibrated on this 2-core machine from the small runs of 2026-11-28 (N = 1 and 2, Patroni's
 * timing, `FleetRun.totalSeconds` less settle and window: Stator 71 and 83 s, Patroni 139 and 143 s, the failovers'
 * random moment of the HA loop moving Patroni's by up to 2 loop_waits), rounded up; the part per cluster from the start
 * of three clusters in 15 s (a batch of four at a time on 2 cores) and the storm's growth. The fast timing takes less.
 */
export const FLEET_RUN_SECONDS: Record<Kind, { fixed: number; perCluster: number }> = {
  stator: { fixed: 80, perCluster: 8 },
  patroni: { fixed: 150, perCluster: 8 },
};

export interface FleetRunEstimate {
  seconds: number;
  text: string;
}

export function estimateFleetRun(options: FleetOptions): FleetRunEstimate {
  let seconds = 0;
  for (const count of options.counts) {
    for (const kind of options.products) {
      const cost = FLEET_RUN_SECONDS[kind];
      const window = options.scenarios.includes('window') ? options.windowSeconds : 0;
      seconds += cost.fixed + cost.perCluster * count + options.settleSeconds + window;
    }
  }
  const fleets = options.counts.length * options.products.length;
  const largest = Math.max(...options.counts);
  return {
    seconds,
    text:
      `estimated duration: ${(seconds / 60).toFixed(0)} min for ${fleets} fleets (${options.counts.join(', ')} clusters × ${options.products.join(' and ')}; ` +
      `up to ${largest * 3} agents and ${largest * 3} PostgreSQL servers at once): the machine should be otherwise idle`,
  };
}
