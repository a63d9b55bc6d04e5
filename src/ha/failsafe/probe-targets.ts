import { ClusterView } from '../../dcs/dcs.port';
import { PeerReading } from '../cluster-snapshot';

export interface ProbeTarget {
  name: string;
  apiUrl: string;
  /** Named only in `/failsafe` (no member key): asked whether it still runs as a primary, nothing more. */
  failsafeOnly?: true;
}

/**
 * Whom a node probes when decide() asks for its peers: every other member with an API in the cluster
 * view, and in the leader race with failsafe mode on, each other member `/failsafe` names too (as the
 * reference's race does). A failsafe leader cut off from the DCS loses its member key with its lease
 * but may still run as a primary; a member that never accepted its call (one restarted since forgets
 * it) must see it answer before racing, or it would promote beside it.
 */
export function probeTargets(cluster: ClusterView | null, self: string, failsafeMode: boolean): ProbeTarget[] {
  const targets = new Map<string, ProbeTarget>();
  for (const member of cluster?.members ?? [])
    if (member.name !== self && member.data.api_url)
      targets.set(member.name, { name: member.name, apiUrl: member.data.api_url });
  if (failsafeMode && cluster && !cluster.leader)
    for (const [name, apiUrl] of Object.entries(cluster.failsafe?.value ?? {}))
      if (name !== self && !targets.has(name) && typeof apiUrl === 'string' && apiUrl)
        targets.set(name, { name, apiUrl, failsafeOnly: true });
  return [...targets.values()];
}

/**
 * The readings the race weighs: a member named only in `/failsafe` counts only when it runs as a primary
 * (it bars the race). Otherwise it is cut off from the DCS or just restarted, cannot take the lock, and,
 * as without failsafe mode, holds nobody back by its WAL or its priority (the reference compares it too:
 * a deviation, see docs/configuration.md).
 */
export function weighedReadings(targets: ProbeTarget[], readings: PeerReading[]): PeerReading[] {
  return readings.filter((reading, k) => !targets[k].failsafeOnly || (reading.reachable && reading.isPrimary));
}
