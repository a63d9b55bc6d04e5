import { ClusterView } from '../../dcs/dcs.port';

/**
 * Whom a node probes when decide() asks for its peers: every other member with an API in the cluster
 * view, and in the leader race with failsafe mode on, each other member `/failsafe` names too (as the
 * reference's race does). A failsafe leader cut off from the DCS loses its member key with its lease
 * but may still run as a primary; a member that never accepted its call (one restarted since forgets
 * it) must see it answer before racing, or it would promote beside it.
 */
export function probeTargets(
  cluster: ClusterView | null,
  self: string,
  failsafeMode: boolean,
): { name: string; apiUrl: string }[] {
  const targets = new Map<string, string>();
  for (const member of cluster?.members ?? [])
    if (member.name !== self && member.data.api_url) targets.set(member.name, member.data.api_url);
  if (failsafeMode && cluster && !cluster.leader)
    for (const [name, apiUrl] of Object.entries(cluster.failsafe?.value ?? {}))
      if (name !== self && !targets.has(name) && typeof apiUrl === 'string' && apiUrl) targets.set(name, apiUrl);
  return [...targets].map(([name, apiUrl]) => ({ name, apiUrl }));
}
