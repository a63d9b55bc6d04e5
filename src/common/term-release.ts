/**
 * What the fence needs to end a dead leader's term itself: where etcd answers (its JSON gateway) and
 * which lease holds the leader key. Revoking that lease deletes the leader and member keys at once,
 * so the replicas' watch fires without waiting for the lease to expire.
 *
 * Described by the DCS adapter and sent to the fence, which revokes it (`src/postgresql/fence/fence_revoke.py`).
 */
export interface TermRelease {
  /** Gateway base URLs (`http://host:2379`), tried in turn. */
  endpoints: string[];
  /** The lease the leader key is attached to (etcd's decimal int64). */
  leaseId: string;
  /** PEM files for https endpoints. */
  tls?: { cacert?: string; cert?: string; key?: string };
  /** etcd RBAC user: the fence authenticates before revoking. */
  auth?: { username: string; password: string };
}
