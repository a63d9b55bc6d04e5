import { Observable } from 'rxjs';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  compareRevisions,
  EtcdClient,
  KeyValue,
  nextRevision,
  TxnCompare,
  watchUntilBroken,
  WatchBrokenError,
} from '../dcs/etcd/etcd-client';
import { NewEvent, RecordedEvent } from './event';
import { EventFilter, EventStore, ExpectedVersion, ExpectedVersionConflict } from './event-store.port';

export interface EtcdEventStoreOptions {
  /** etcd client endpoints, `host:port`. */
  hosts: string[];
  scope: string;
  /** Deadline of each etcd request. The store does not retry unreachable etcd: the caller (EventRecorder) does. */
  requestTimeoutMs: number;
}

/** etcd's default `--max-txn-ops` is 128: one put per event plus the head. */
const MAX_EVENTS_PER_APPEND = 100;
const ANY_VERSION_ATTEMPTS = 5;
const SEQ_DIGITS = 12;
const HEADS = 'heads';
const FIRST_RETRY_DELAY_MS = 100;
const MAX_RETRY_DELAY_MS = 1000;

/**
 * EventStore on etcd v3 under its own prefix `/stator-events/<scope>/`, outside the cluster
 * prefix so DCS range reads never fetch events.
 *
 * Layout: `<prefix><stream>/<seq, 12 digits>` = JSON of the RecordedEvent, and
 * `<prefix>heads/<stream>` = the stream's last seq, written in the same txn so that `lastSeq`
 * is a single key read. Store order is etcd's mod revision (one txn per append).
 */
export class EtcdEventStore implements EventStore {
  private readonly client: EtcdClient;
  private readonly prefix: string;
  private readonly headsPrefix: string;
  /** Aborted by close(): ends every subscription. */
  private readonly lifetime = new AbortController();

  constructor(private readonly options: EtcdEventStoreOptions) {
    this.client = new EtcdClient({ hosts: options.hosts });
    this.prefix = `/stator-events/${options.scope}/`;
    this.headsPrefix = `${this.prefix}${HEADS}/`;
  }

  /**
   * One txn: numeric `expectedVersion` → compares "key expectedVersion+1 absent" and, above 0,
   * "key expectedVersion exists", then puts every event and the new head. A failed compare
   * rejects with ExpectedVersionConflict carrying the stored head. 'any' reads the head and
   * appends after it, retrying a few times when another writer got there first.
   * At most MAX_EVENTS_PER_APPEND events per call (one etcd txn).
   */
  async append(stream: string, events: NewEvent[], expectedVersion: ExpectedVersion): Promise<RecordedEvent[]> {
    assertStreamName(stream);
    if (events.length > MAX_EVENTS_PER_APPEND) {
      throw new Error(`append to ${stream}: ${events.length} events exceed ${MAX_EVENTS_PER_APPEND} per append`);
    }
    if (expectedVersion !== 'any') return this.appendAt(stream, events, expectedVersion);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.appendAt(stream, events, await this.lastSeq(stream));
      } catch (error) {
        if (!(error instanceof ExpectedVersionConflict) || attempt >= ANY_VERSION_ATTEMPTS) throw error;
      }
    }
  }

  /** With `stream`: that stream from `fromSeq`, by seq. Without: every stream, in store order. */
  async read(filter: EventFilter = {}): Promise<RecordedEvent[]> {
    if (filter.stream === undefined) {
      const all = await this.client.range(this.prefix, { prefix: true }, this.options.requestTimeoutMs);
      return all.kvs
        .filter((kv) => !kv.key.startsWith(this.headsPrefix))
        .map((kv) => ({ kv, event: parseEvent(kv.value) }))
        .filter((entry): entry is { kv: KeyValue; event: RecordedEvent } => entry.event !== null)
        .sort((a, b) => compareRevisions(a.kv.modRevision, b.kv.modRevision) || a.event.seq - b.event.seq)
        .map((entry) => entry.event);
    }
    assertStreamName(filter.stream);
    // Keys of this stream continue with digits; ':' sorts right after '9', which leaves out
    // nested streams like `<stream>/postgres/...`.
    const streamKeys = await this.client.range(
      this.eventKey(filter.stream, Math.max(filter.fromSeq ?? 1, 1)),
      { rangeEnd: `${this.prefix}${filter.stream}/:` },
      this.options.requestTimeoutMs,
    );
    return streamKeys.kvs
      .map((kv) => parseEvent(kv.value))
      .filter((event): event is RecordedEvent => event !== null && event.stream === filter.stream);
  }

  async lastSeq(stream: string): Promise<number> {
    assertStreamName(stream);
    const head = await this.client.range(this.headKey(stream), {}, this.options.requestTimeoutMs);
    return parseHead(head.kvs[0]?.value);
  }

  /**
   * Watches the prefix and emits every event stored after the latest revision this client had
   * seen when subscribing (from the current revision when it has seen none), in store order.
   * A broken watch resumes after the last delivered revision; only events compacted away in
   * the meantime can be skipped.
   */
  subscribe(): Observable<RecordedEvent> {
    return new Observable<RecordedEvent>((subscriber) => {
      const unsubscribed = new AbortController();
      const stop = AbortSignal.any([unsubscribed.signal, this.lifetime.signal]);
      const seen = this.client.lastSeenRevision;
      void this.followEvents(seen === null ? null : nextRevision(seen), stop, (event) => subscriber.next(event)).then(() =>
        subscriber.complete(),
      );
      return () => unsubscribed.abort();
    });
  }

  /** Stops every subscription (they complete) and aborts requests in flight. */
  async close(): Promise<void> {
    this.lifetime.abort();
    this.client.close();
  }

  /** Keeps a prefix watch running until `stop`, resuming after the last delivered revision whenever it breaks. */
  private async followEvents(from: string | null, stop: AbortSignal, emit: (event: RecordedEvent) => void): Promise<void> {
    let resumeFrom = from;
    let delay = FIRST_RETRY_DELAY_MS;
    while (!stop.aborted) {
      try {
        resumeFrom ??= nextRevision(
          (await this.client.range(this.prefix, { prefix: true, countOnly: true }, this.options.requestTimeoutMs)).revision,
        );
        const watch = this.client.watch(this.prefix, { prefix: true, startRevision: resumeFrom }, this.options.requestTimeoutMs);
        await watchUntilBroken(watch, stop, (response) => {
          delay = FIRST_RETRY_DELAY_MS;
          for (const { type, kv } of response.events) {
            const event = type === 'put' && !kv.key.startsWith(this.headsPrefix) ? parseEvent(kv.value) : null;
            if (event) emit(event);
            resumeFrom = nextRevision(kv.modRevision);
          }
        });
      } catch (error) {
        // Compacted: what is left starts at the compaction revision. Otherwise retry from where we were.
        if (error instanceof WatchBrokenError && error.compactRevision) resumeFrom = error.compactRevision;
      }
      await sleep(delay, undefined, { signal: stop }).catch(() => undefined);
      delay = Math.min(delay * 2, MAX_RETRY_DELAY_MS);
    }
  }

  private async appendAt(stream: string, events: NewEvent[], expected: number): Promise<RecordedEvent[]> {
    const stored = events.map((event, index) => ({ ...event, stream, seq: expected + index + 1 }));
    const compare: TxnCompare[] = [{ key: this.eventKey(stream, expected + 1), target: 'CREATE', createRevision: '0' }];
    if (expected > 0) {
      compare.push({ key: this.eventKey(stream, expected), target: 'CREATE', result: 'GREATER', createRevision: '0' });
    }
    const result = await this.client.txn(
      {
        compare,
        success: [
          ...stored.map((event) => ({ put: { key: this.eventKey(stream, event.seq), value: JSON.stringify(event) } })),
          { put: { key: this.headKey(stream), value: String(expected + stored.length) } },
        ],
        failure: [{ range: { key: this.headKey(stream) } }],
      },
      this.options.requestTimeoutMs,
    );
    if (!result.succeeded) {
      throw new ExpectedVersionConflict(stream, expected, parseHead(result.responses[0]?.kvs[0]?.value));
    }
    return stored;
  }

  private eventKey(stream: string, seq: number): string {
    return `${this.prefix}${stream}/${String(seq).padStart(SEQ_DIGITS, '0')}`;
  }

  private headKey(stream: string): string {
    return `${this.prefix}${HEADS}/${stream}`;
  }
}

/** `heads` is the head keys' folder, so no stream may live there. */
function assertStreamName(stream: string): void {
  if (!stream || stream === HEADS || stream.startsWith(`${HEADS}/`) || stream.endsWith('/')) {
    throw new Error(`invalid event stream name: '${stream}'`);
  }
}

function parseHead(value: string | undefined): number {
  const seq = Number(value ?? 0);
  return Number.isInteger(seq) && seq > 0 ? seq : 0;
}

/** Values that are not events (written by someone else) are skipped rather than thrown. */
function parseEvent(value: string): RecordedEvent | null {
  try {
    const event = JSON.parse(value) as RecordedEvent;
    return typeof event?.stream === 'string' && typeof event.seq === 'number' ? event : null;
  } catch {
    return null;
  }
}
