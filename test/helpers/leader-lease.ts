/** The TTL (s) etcd granted the lease that holds the cluster's leader key, null when there is no leader key. */
export async function leaderLeaseTtl(cluster: { scope: string; etcd: { endpoint: string } }): Promise<number | null> {
  const key = Buffer.from(`/service/${cluster.scope}/leader`).toString('base64');
  const read = await fetch(`http://${cluster.etcd.endpoint}/v3/kv/range`, {
    method: 'POST',
    body: JSON.stringify({ key }),
  });
  const lease = ((await read.json()) as { kvs?: { lease?: string }[] }).kvs?.[0]?.lease;
  if (!lease) return null;
  const answer = await fetch(`http://${cluster.etcd.endpoint}/v3/lease/timetolive`, {
    method: 'POST',
    body: JSON.stringify({ ID: lease }),
  });
  return Number(((await answer.json()) as { grantedTTL?: string }).grantedTTL ?? NaN);
}
