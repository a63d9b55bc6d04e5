import { readFileSync } from 'node:fs';
import { ConfigError, DEFAULT_NAMESPACE, loadConfig } from '../config/load-config';
import { withSrvEndpoints } from '../dcs/etcd/etcd-srv-discovery';
import { EtcdConnection } from '../dcs/etcd/etcd-transport';
import { EtcdEventStore, eventLogPrefix } from '../events/etcd-event-store';
import { RecordedEvent } from '../events/event';
import { coveredByCheckpoint, LogCheckpoint } from '../events/log-checkpoint';

/** Where `stator audit` reads the event log. */
export type AuditSource =
  | { kind: 'etcd'; hosts: string[]; scope: string; namespace: string }
  | { kind: 'config'; path: string }
  | { kind: 'file'; path: string }
  /** Events already read by the caller (statorctl reads them through a node's `GET /events`), in store order. */
  | { kind: 'events'; description: string; events: RecordedEvent[] };

/** The events of a source, in its order, with the line each one has (or would have) in an export. */
export interface AuditLog {
  events: RecordedEvent[];
  /** `lines[i]` is the line of `events[i]`: in the file, or its position in store order (an export's line). */
  lines: number[];
  /** The source in words, e.g. `etcd 127.0.0.1:2379, scope demo`. */
  description: string;
  /** Where retention cut the log, if it did: the events start after it. */
  checkpoint: LogCheckpoint | null;
}

/** The source cannot be read (unreachable, missing, unparseable, empty): exit code 2. */
export class SourceError extends Error {
  override readonly name = 'SourceError';
}

/** Deadline of the single etcd range read of the whole log. */
const ETCD_READ_TIMEOUT_MS = 10_000;

/**
 * Reads every event of the source. `--config` takes `etcd3.hosts` and `scope` from the node's
 * configuration (with the same PATRONI_ and STATOR_ environment overrides as the agent, from `env`).
 * @throws SourceError naming the source and what went wrong.
 */
export async function loadAuditLog(source: AuditSource, env: NodeJS.ProcessEnv): Promise<AuditLog> {
  if (source.kind === 'file') return readExportFile(source.path);
  if (source.kind === 'events') {
    if (source.events.length === 0) throw new SourceError(`${source.description}: no events`);
    return {
      events: source.events,
      lines: source.events.map((_, index) => index + 1),
      description: source.description,
      checkpoint: null,
    };
  }
  const { connection, scope, namespace } =
    source.kind === 'etcd'
      ? { connection: { hosts: source.hosts }, scope: source.scope, namespace: source.namespace }
      : await etcdOfConfig(source.path, env);
  const description = `etcd ${connection.hosts.join(',')}, scope ${scope}${namespace === DEFAULT_NAMESPACE ? '' : `, namespace ${namespace}`}`;
  const store = new EtcdEventStore({ ...connection, scope, namespace, requestTimeoutMs: ETCD_READ_TIMEOUT_MS });
  let events: RecordedEvent[];
  let checkpoint: LogCheckpoint | null;
  try {
    events = await store.read();
    // After the events: a cut made in between covers some of them, which are then left out.
    checkpoint = await store.readCheckpoint();
    events = events.filter((event) => !coveredByCheckpoint(checkpoint, event.stream, event.seq));
  } catch (error) {
    throw new SourceError(`${description}: unreachable: ${(error as Error).message}`);
  } finally {
    await store.close();
  }
  // An empty log is almost always a wrong scope or endpoint; auditing it would prove nothing.
  if (events.length === 0)
    throw new SourceError(`${description}: no events stored under ${eventLogPrefix(namespace, scope)}`);
  return { events, lines: events.map((_, index) => index + 1 + (checkpoint ? 1 : 0)), description, checkpoint };
}

/** etcd as the node reaches it (endpoints, TLS, user) and the scope. */
async function etcdOfConfig(
  path: string,
  env: NodeJS.ProcessEnv,
): Promise<{ connection: EtcdConnection; scope: string; namespace: string }> {
  let config;
  try {
    config = loadConfig(path, env).config;
  } catch (error) {
    if (error instanceof ConfigError) throw new SourceError(`${path}: ${error.problems.join('; ')}`);
    throw error;
  }
  try {
    // etcd3.srv: etcd as the agent finds it; the description names the hosts used.
    return {
      connection: await withSrvEndpoints(config.etcd3, { info: () => undefined, warning: () => undefined }),
      scope: config.scope,
      namespace: config.namespace,
    };
  } catch (error) {
    throw new SourceError(`${path}: ${(error as Error).message}`);
  }
}

/**
 * An export: one JSON event per line, after a `{"checkpoint": ...}` line when retention cut the
 * log; blank lines are skipped, anything else that is not an event stops the audit.
 */
function readExportFile(path: string): AuditLog {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new SourceError(`${path}: ${(error as Error).message}`);
  }
  const events: RecordedEvent[] = [];
  const lines: number[] = [];
  let checkpoint: LogCheckpoint | null = null;
  text.split('\n').forEach((line, index) => {
    if (!line.trim()) return;
    const cut = events.length === 0 && checkpoint === null ? parseCheckpointLine(line) : null;
    if (cut) {
      checkpoint = cut;
      return;
    }
    const event = parseEvent(line);
    if (!event) throw new SourceError(`${path} line ${index + 1}: not an event: ${line.slice(0, 120)}`);
    events.push(event);
    lines.push(index + 1);
  });
  if (events.length === 0) throw new SourceError(`${path}: no events`);
  return { events, lines, description: path, checkpoint };
}

/** The line `exportLines` writes first for a cut log. */
function parseCheckpointLine(line: string): LogCheckpoint | null {
  try {
    const value = JSON.parse(line) as { checkpoint?: LogCheckpoint } | null;
    const checkpoint = value?.checkpoint;
    return typeof checkpoint?.streams === 'object' &&
      checkpoint.streams !== null &&
      typeof checkpoint.projections === 'object'
      ? checkpoint
      : null;
  } catch {
    return null;
  }
}

function parseEvent(line: string): RecordedEvent | null {
  try {
    const value = JSON.parse(line) as Partial<RecordedEvent> | null;
    const isEvent =
      typeof value === 'object' &&
      value !== null &&
      typeof value.stream === 'string' &&
      Number.isInteger(value.seq) &&
      typeof value.type === 'string' &&
      typeof value.at === 'string';
    return isEvent ? (value as RecordedEvent) : null;
  } catch {
    return null;
  }
}
