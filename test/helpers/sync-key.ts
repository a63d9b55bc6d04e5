export interface SyncKey {
  leader: string | null;
  quorum?: number;
  sync_standby: string | null;
}

/**
 * `/sync` as stored in etcd, read through etcd's JSON gateway (not through an agent): null when absent. `cluster`: a
 * LocalCluster, or any cluster under `/service` (Patroni's nodes of a side-by-side run).
 */
export async function readSyncKey(cluster: { scope: string; etcd: { endpoint: string } }): Promise<SyncKey | null> {
  const key = Buffer.from(`/service/${cluster.scope}/sync`).toString('base64');
  const response = await fetch(`http://${cluster.etcd.endpoint}/v3/kv/range`, {
    method: 'POST',
    body: JSON.stringify({ key }),
  });
  const value = ((await response.json()) as { kvs?: { value: string }[] }).kvs?.[0]?.value;
  return value ? (JSON.parse(Buffer.from(value, 'base64').toString()) as SyncKey) : null;
}
