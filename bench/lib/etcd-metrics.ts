import { now } from './util';

/**
 * etcd's own figures, read from each member's `/metrics` (Prometheus text): what a fleet of agents costs the etcd it
 * shares. Client-facing counters (requests, bytes, watch events, watchers) are kept by the member a client talks to,
 * so they are summed over the members; the database and raft figures are the same on every member, so the largest
 * is taken. The bench's own reads of /metrics are plain HTTP and count in none of them.
 */

/** One member's metrics: `name{labels}` (labels as etcd prints them) to value. */
export type MemberMetrics = Map<string, number>;

export interface EtcdScrape {
  /** When the scrape was taken (epoch ms). */
  at: number;
  members: MemberMetrics[];
}

/** Parses Prometheus' text format: one sample a line, comments skipped. */
export function parseMetrics(text: string): MemberMetrics {
  const metrics: MemberMetrics = new Map();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    const value = Number(line.slice(space + 1));
    if (space > 0 && Number.isFinite(value)) metrics.set(line.slice(0, space), value);
  }
  return metrics;
}

export async function scrapeEtcd(endpoints: string[], timeoutMs = 5000): Promise<EtcdScrape> {
  const members = await Promise.all(
    endpoints.map(async (endpoint) => {
      const response = await fetch(`http://${endpoint}/metrics`, { signal: AbortSignal.timeout(timeoutMs) });
      if (!response.ok) throw new Error(`etcd ${endpoint}/metrics: HTTP ${response.status}`);
      return parseMetrics(await response.text());
    }),
  );
  return { at: now(), members };
}

/** Every sample of `name` whose labels contain each of `labels` (`key="value"`). */
function samples(metrics: MemberMetrics, name: string, labels: string[] = []): number[] {
  const found: number[] = [];
  for (const [key, value] of metrics) {
    const brace = key.indexOf('{');
    if ((brace < 0 ? key : key.slice(0, brace)) !== name) continue;
    if (labels.every((label) => key.includes(label))) found.push(value);
  }
  return found;
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
const summedOverMembers = (scrape: EtcdScrape, name: string, labels: string[] = []) =>
  sum(scrape.members.map((m) => sum(samples(m, name, labels))));
const largestOverMembers = (scrape: EtcdScrape, name: string) =>
  Math.max(...scrape.members.map((m) => sum(samples(m, name))));

/**
 * gRPC methods of etcd's client API, as etcd labels them (`grpc_method`), in the order the tables show them; any other
 * method of etcd's services that was called (Status, MemberList...) follows them.
 */
export const REQUEST_KINDS = [
  'Range',
  'Txn',
  'Put',
  'DeleteRange',
  'LeaseGrant',
  'LeaseKeepAlive',
  'LeaseRevoke',
  'LeaseTimeToLive',
  'Watch',
] as const;

/** Every method of etcd's own services (`etcdserverpb.*`, not gRPC's health service) that the scrape has a counter for. */
function etcdMethods(scrape: EtcdScrape): string[] {
  const methods = new Set<string>();
  for (const member of scrape.members) {
    for (const key of member.keys()) {
      if (!key.startsWith('grpc_server_msg_received_total{') || !key.includes('grpc_service="etcdserverpb.')) continue;
      const method = /grpc_method="([^"]+)"/.exec(key)?.[1];
      if (method) methods.add(method);
    }
  }
  return [...methods];
}

export interface EtcdLoad {
  seconds: number;
  /**
   * Requests per second by gRPC method: messages etcd received (`grpc_server_msg_received_total`), so a keep-alive
   * stream counts each keep-alive and a watch stream each create or cancel; every REQUEST_KINDS method, then any other
   * method of etcd's that was called in the window. Requests through etcd's JSON gateway (which
   * both agents use) reach its gRPC server too and count the same.
   */
  requestsPerSecond: Record<string, number>;
  /** Every request kind together. */
  allRequestsPerSecond: number;
  /** Events etcd sent to watchers (`etcd_debugging_mvcc_events_total`), per second. */
  watchEventsPerSecond: number;
  /** `etcd_network_client_grpc_received_bytes_total` / `..._sent_bytes_total`, per second. */
  bytesInPerSecond: number;
  bytesOutPerSecond: number;
  /** Raft proposals committed per second: etcd's writes. */
  proposalsPerSecond: number;
  /** Elections etcd held in the window (`etcd_server_leader_changes_seen_total`): each ends its members' watches. */
  leaderChanges: number;
  /** Open at the end of the window (`etcd_debugging_mvcc_watcher_total`, `..._watch_stream_total`). */
  watchers: number;
  watchStreams: number;
  /** At the end of the window (`etcd_mvcc_db_total_size_in_bytes`, `..._in_use_in_bytes`, `etcd_debugging_mvcc_keys_total`). */
  dbSizeBytes: number;
  dbInUseBytes: number;
  keys: number;
  /** Growth of the database file and of its live part over the window, scaled to an hour. */
  dbGrowthBytesPerHour: number;
  dbInUseGrowthBytesPerHour: number;
  /** p99 over the window, from the histograms' buckets (the bucket's upper bound), ms; NaN: nothing observed. */
  walFsyncP99Ms: number;
  backendCommitP99Ms: number;
}

/** What etcd served between two scrapes. */
export function etcdLoad(before: EtcdScrape, after: EtcdScrape): EtcdLoad {
  const seconds = (after.at - before.at) / 1000;
  const rate = (name: string, labels: string[] = []) =>
    (summedOverMembers(after, name, labels) - summedOverMembers(before, name, labels)) / seconds;
  const requestsPerSecond: Record<string, number> = {};
  for (const kind of REQUEST_KINDS) {
    requestsPerSecond[kind] = rate('grpc_server_msg_received_total', [
      `grpc_method="${kind}"`,
      'grpc_service="etcdserverpb.',
    ]);
  }
  for (const method of etcdMethods(after).filter((m) => !(REQUEST_KINDS as readonly string[]).includes(m))) {
    const perSecond = rate('grpc_server_msg_received_total', [
      `grpc_method="${method}"`,
      'grpc_service="etcdserverpb.',
    ]);
    if (perSecond > 0) requestsPerSecond[method] = perSecond;
  }
  const growth = (name: string) =>
    ((largestOverMembers(after, name) - largestOverMembers(before, name)) / seconds) * 3600;
  return {
    seconds,
    requestsPerSecond,
    allRequestsPerSecond: sum(Object.values(requestsPerSecond)),
    watchEventsPerSecond: rate('etcd_debugging_mvcc_events_total'),
    bytesInPerSecond: rate('etcd_network_client_grpc_received_bytes_total'),
    bytesOutPerSecond: rate('etcd_network_client_grpc_sent_bytes_total'),
    proposalsPerSecond:
      (largestOverMembers(after, 'etcd_server_proposals_committed_total') -
        largestOverMembers(before, 'etcd_server_proposals_committed_total')) /
      seconds,
    leaderChanges:
      largestOverMembers(after, 'etcd_server_leader_changes_seen_total') -
      largestOverMembers(before, 'etcd_server_leader_changes_seen_total'),
    watchers: summedOverMembers(after, 'etcd_debugging_mvcc_watcher_total'),
    watchStreams: summedOverMembers(after, 'etcd_debugging_mvcc_watch_stream_total'),
    dbSizeBytes: largestOverMembers(after, 'etcd_mvcc_db_total_size_in_bytes'),
    dbInUseBytes: largestOverMembers(after, 'etcd_mvcc_db_total_size_in_use_in_bytes'),
    keys: largestOverMembers(after, 'etcd_debugging_mvcc_keys_total'),
    dbGrowthBytesPerHour: growth('etcd_mvcc_db_total_size_in_bytes'),
    dbInUseGrowthBytesPerHour: growth('etcd_mvcc_db_total_size_in_use_in_bytes'),
    walFsyncP99Ms: histogramQuantile(before, after, 'etcd_disk_wal_fsync_duration_seconds', 0.99) * 1000,
    backendCommitP99Ms: histogramQuantile(before, after, 'etcd_disk_backend_commit_duration_seconds', 0.99) * 1000,
  };
}

/**
 * The `q` quantile of what a histogram observed between two scrapes, every member's observations together: the upper
 * bound of the first bucket holding it (Prometheus' buckets are cumulative). NaN when nothing was observed.
 */
export function histogramQuantile(before: EtcdScrape, after: EtcdScrape, name: string, q: number): number {
  const buckets = new Map<number, number>();
  const add = (scrape: EtcdScrape, sign: number) => {
    for (const member of scrape.members) {
      for (const [key, value] of member) {
        if (!key.startsWith(`${name}_bucket{`)) continue;
        const le = /le="([^"]+)"/.exec(key)?.[1];
        if (le === undefined) continue;
        const bound = le === '+Inf' ? Infinity : Number(le);
        buckets.set(bound, (buckets.get(bound) ?? 0) + sign * value);
      }
    }
  };
  add(after, 1);
  add(before, -1);
  const sorted = [...buckets.entries()].sort((a, b) => a[0] - b[0]);
  const total = sorted.at(-1)?.[1] ?? 0;
  if (total <= 0) return NaN;
  return sorted.find(([, count]) => count >= q * total)![0];
}
