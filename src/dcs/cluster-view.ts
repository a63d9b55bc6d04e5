import {
  ClusterView,
  DynamicConfig,
  FailoverRequest,
  HistoryEntry,
  LeaderStatus,
  Member,
  MemberData,
  SyncState,
  Versioned,
} from './dcs.port';

/**
 * Patroni's key layout under `/<namespace>/<scope>/` and the parsing of a prefix read into a
 * ClusterView, shared by the etcd and in-memory adapters so both read the store the same way.
 */
export const ClusterKeys = {
  leader: 'leader',
  config: 'config',
  initialize: 'initialize',
  history: 'history',
  failover: 'failover',
  sync: 'sync',
  status: 'status',
  failsafe: 'failsafe',
  member: (name: string) => `members/${name}`,
} as const;

/** `/service` + `batman` → `/service/batman/` (slashes normalised as Patroni does). */
export function clusterPrefix(namespace: string, scope: string): string {
  const trimmedNamespace = namespace.replace(/^\/+|\/+$/g, '');
  return `/${trimmedNamespace ? `${trimmedNamespace}/` : ''}${scope}/`;
}

/** One stored key, relative to the cluster prefix. */
export interface StoredKey {
  key: string;
  value: string;
  modRevision: string;
}

/**
 * Builds the cluster view from every key under the prefix. Bad data written by someone else never
 * throws: a malformed JSON value reads as the empty value of its kind (keeping its revision, so
 * a CAS write can still replace it), and a member key that is not a JSON object is skipped.
 */
export function parseClusterView(keys: StoredKey[], revision: string): ClusterView {
  const view: ClusterView = {
    leader: null,
    members: [],
    initialize: null,
    config: null,
    failover: null,
    history: null,
    sync: null,
    status: null,
    failsafe: null,
    revision,
  };
  for (const { key, value, modRevision } of keys) {
    const versioned = <T>(parsed: T): Versioned<T> => ({ value: parsed, modRevision });
    switch (key) {
      case ClusterKeys.leader:
        view.leader = versioned(value);
        break;
      case ClusterKeys.initialize:
        view.initialize = value;
        break;
      case ClusterKeys.config:
        view.config = versioned(parseObject(value) as DynamicConfig);
        break;
      case ClusterKeys.failover:
        view.failover = versioned(parseFailover(value));
        break;
      case ClusterKeys.history:
        view.history = versioned(parseHistory(value));
        break;
      case ClusterKeys.sync:
        view.sync = versioned(parseSync(value));
        break;
      case ClusterKeys.failsafe:
        view.failsafe = versioned(parseFailsafe(value));
        break;
      case ClusterKeys.status:
        view.status = versioned(parseStatus(value));
        break;
      default: {
        const memberName = /^members\/([^/]+)$/.exec(key)?.[1];
        const data = memberName === undefined ? null : parseMember(value);
        if (memberName !== undefined && data) view.members.push({ name: memberName, data, modRevision });
      }
    }
  }
  view.members.sort((a: Member, b: Member) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return view;
}

function parseJson(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parseObject(value: string): Record<string, unknown> {
  const parsed = parseJson(value);
  return isObject(parsed) ? parsed : {};
}

/** The five required fields are always strings; other keys are kept as stored, in stored order. */
function parseMember(value: string): MemberData | null {
  const parsed = parseJson(value);
  if (!isObject(parsed)) return null;
  const text = (field: unknown) => (typeof field === 'string' ? field : '');
  return {
    ...parsed,
    conn_url: text(parsed.conn_url),
    api_url: text(parsed.api_url),
    state: text(parsed.state),
    role: text(parsed.role),
    version: text(parsed.version),
  };
}

/** `{}` and `""` mean no request; a non-JSON value is the legacy `leader:member` form. */
function parseFailover(value: string): FailoverRequest {
  if (!value.trim()) return {};
  const parsed = parseJson(value);
  if (parsed === undefined) {
    const [leader, member] = value.split(':').map((part) => part.trim());
    return { ...(leader ? { leader } : {}), ...(member ? { member } : {}) };
  }
  if (!isObject(parsed)) return {};
  const request: FailoverRequest = {};
  for (const field of ['leader', 'member', 'scheduled_at', 'site'] as const) {
    if (typeof parsed[field] === 'string') request[field] = parsed[field];
  }
  return request;
}

function parseHistory(value: string): HistoryEntry[] {
  const parsed = parseJson(value);
  if (!Array.isArray(parsed)) return [];
  return parsed.filter(
    (entry): entry is HistoryEntry =>
      Array.isArray(entry) && typeof entry[0] === 'number' && typeof entry[1] === 'number',
  );
}

function parseSync(value: string): SyncState {
  const parsed = parseObject(value);
  const nameOrNull = (field: unknown) => (typeof field === 'string' ? field : null);
  return {
    leader: nameOrNull(parsed.leader),
    sync_standby: nameOrNull(parsed.sync_standby),
    ...(typeof parsed.quorum === 'number' ? { quorum: parsed.quorum } : {}),
  };
}

/** `/failsafe`: member name → API URL; anything else in it is dropped. */
function parseFailsafe(value: string): Record<string, string> {
  const parsed = parseObject(value);
  return Object.fromEntries(
    Object.entries(parsed).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}

function parseStatus(value: string): LeaderStatus {
  return parseObject(value) as LeaderStatus;
}
