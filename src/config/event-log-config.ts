import {
  childPath,
  Findings,
  ignoreUnsupported,
  isAbsent,
  Mapping,
  readIntegerInRange,
  readSection,
} from './config-readers';

/**
 * Stator's own `event_log` section: how much of etcd the cluster's event log may hold. Many clusters
 * usually share one etcd, and an etcd past its backend quota (`--quota-backend-bytes`, 2 GiB by
 * default) raises its NOSPACE alarm and refuses every write, leader keys included: the log's share
 * is bounded by retention (age, count, bytes) and by a guard that stops appending events while
 * etcd's database is past `etcd_quota_share` of the quota.
 */
export interface EventLogSettings {
  /** Events older than this many seconds are removed. */
  max_age: number;
  /** No stream keeps more events than this. */
  max_events_per_stream: number;
  /** The cluster's whole log, as stored (JSON values), is cut to at most this many bytes. */
  max_bytes: number;
  /** The `--quota-backend-bytes` etcd runs with. */
  etcd_quota_bytes: number;
  /** Events wait in the node's queue while etcd's database is over this share of `etcd_quota_bytes`. */
  etcd_quota_share: number;
}

const MIB = 1024 * 1024;
/** 8 MiB per cluster: 100 clusters keep 800 MiB of events, 39% of etcd's default quota. */
export const DEFAULT_EVENT_LOG: EventLogSettings = {
  max_age: 30 * 24 * 3600,
  max_events_per_stream: 100_000,
  max_bytes: 8 * MIB,
  etcd_quota_bytes: 2048 * MIB,
  etcd_quota_share: 0.5,
};
const KEYS = ['max_age', 'max_events_per_stream', 'max_bytes', 'etcd_quota_bytes', 'etcd_quota_share'] as const;

export function readEventLog(findings: Findings, doc: Mapping): EventLogSettings {
  const section = readSection(findings, doc, 'event_log', '');
  ignoreUnsupported(findings, section, 'event_log', KEYS);
  const integer = (key: (typeof KEYS)[number], min: number, max: number) =>
    readIntegerInRange(findings, section, key, 'event_log', min, max);
  return {
    max_age: integer('max_age', 3600, 366 * 24 * 3600) ?? DEFAULT_EVENT_LOG.max_age,
    max_events_per_stream: integer('max_events_per_stream', 100, 10_000_000) ?? DEFAULT_EVENT_LOG.max_events_per_stream,
    max_bytes: integer('max_bytes', MIB, 1024 * MIB) ?? DEFAULT_EVENT_LOG.max_bytes,
    // etcd's documented ceiling for the quota is 8 GiB.
    etcd_quota_bytes: integer('etcd_quota_bytes', 16 * MIB, 8192 * MIB) ?? DEFAULT_EVENT_LOG.etcd_quota_bytes,
    etcd_quota_share: readShare(findings, section) ?? DEFAULT_EVENT_LOG.etcd_quota_share,
  };
}

function readShare(findings: Findings, section: Mapping): number | undefined {
  const value = section.etcd_quota_share;
  if (isAbsent(value)) return undefined;
  const share = typeof value === 'string' && /^\s*\d*\.?\d+\s*$/.test(value) ? Number(value) : value;
  if (typeof share === 'number' && Number.isFinite(share) && share >= 0.05 && share <= 0.9) return share;
  findings.invalid(childPath('event_log', 'etcd_quota_share'), 'must be a fraction from 0.05 to 0.9', value);
  return undefined;
}
