/**
 * Which keys a fleet writes: every key's version (etcd counts each put of a key since its creation) read before and
 * after the measured window, with a keys-only range outside the window so that etcd's request counters do not see it.
 * The difference, grouped by the key's role (`members/*`, `leader`, `status`, the event log...), says what the puts
 * and txns of the window were for.
 */

/** A key's identity (its creation) and how often it has been written since. */
interface KeyVersion {
  createRevision: string;
  version: number;
}

export type KeySnapshot = Map<string, KeyVersion>;

/** Every key of the etcd at `endpoint` with its version: one keys-only range over the whole key space. */
export async function snapshotKeys(endpoint: string, timeoutMs = 5000): Promise<KeySnapshot> {
  const response = await fetch(`http://${endpoint}/v3/kv/range`, {
    method: 'POST',
    // key "\0" to range_end "\0": every key.
    body: JSON.stringify({
      key: Buffer.from([0]).toString('base64'),
      range_end: Buffer.from([0]).toString('base64'),
      keys_only: true,
    }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  if (!response.ok) throw new Error(`etcd ${endpoint} range: HTTP ${response.status}`);
  const body = (await response.json()) as { kvs?: Array<{ key: string; create_revision?: string; version?: string }> };
  const keys: KeySnapshot = new Map();
  for (const kv of body.kvs ?? []) {
    keys.set(Buffer.from(kv.key, 'base64').toString(), {
      createRevision: kv.create_revision ?? '0',
      version: Number(kv.version ?? 0),
    });
  }
  return keys;
}

/**
 * The role of a key in either product's layout: `/service/<scope>/members/<name>` is `members/*`,
 * `/service/<scope>/leader` is `leader`, anything of Stator's event log `events`.
 */
export function keyRole(key: string): string {
  if (key.startsWith('/stator-events')) return key.includes('/heads/') ? 'events (heads)' : 'events';
  const parts = key.split('/').filter(Boolean);
  // namespace, scope, then the cluster's own key
  const own = parts.slice(2);
  if (own.length === 0) return key;
  return own[0] === 'members' ? 'members/*' : own.join('/');
}

/**
 * Writes per role between two snapshots: the growth of each key's version, a key created meanwhile counted with all
 * its writes, a key created again (a new create revision) likewise; deletions are not writes counted here.
 */
export function writesByRole(before: KeySnapshot, after: KeySnapshot): Record<string, number> {
  const writes: Record<string, number> = {};
  for (const [key, now] of after) {
    const then = before.get(key);
    const count = then && then.createRevision === now.createRevision ? now.version - then.version : now.version;
    if (count <= 0) continue;
    const role = keyRole(key);
    writes[role] = (writes[role] ?? 0) + count;
  }
  return writes;
}
