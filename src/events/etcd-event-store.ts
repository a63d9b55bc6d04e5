import { Observable } from 'rxjs';
import { setTimeout as sleep } from 'node:timers/promises';
import { EtcdClient, nextRevision, TxnCompare, watchUntilBroken, WatchBrokenError } from '../dcs/etcd/etcd-client';
import { EtcdConnection } from '../dcs/etcd/etcd-transport';
import { NewEvent, RecordedEvent } from './event';
import {
  assertRangesWithinLimit,
  EventFilter,
  EventStore,
  ExpectedVersion,
  ExpectedVersionConflict,
  MAX_STREAMS_PER_APPEND,
  StreamRange,
} from './event-store.port';
import { chainStreams } from './hash-chain';
import { CheckpointConflict, LogCheckpoint } from './log-checkpoint';
import { Backoff } from '../common/backoff';
import { EtcdQuotaGuard, EtcdQuotaLimit } from './etcd-quota-guard';
import {
  assertStreamName,
  CHECKPOINT,
  HEADS,
  parseCheckpoint,
  firstConflict,
  IN_TXN,
  inStoreOrder,
  parseEvent,
  parseHead,
  StoredHead,
} from './etcd-event-values';

/** etcd's endpoints, TLS and user (`hosts` are `host:port`), and the cluster whose events are stored. */
export interface EtcdEventStoreOptions extends EtcdConnection {
  scope: string;
  /** The cluster's `namespace` as the configuration normalizes it (default `/service`). */
  namespace?: string;
  /** Deadline of each etcd request. The store does not retry unreachable etcd: the caller (EventRecorder) does. */
  requestTimeoutMs: number;
  /** Appends are refused (EtcdQuotaReached) while etcd's database is past this share of its quota. */
  quota?: EtcdQuotaLimit;
}

const DEFAULT_EVENTS_NAMESPACE = '/service';

/**
 * Where a cluster's events live: `/stator-events/<scope>/` in the default namespace (`/service`), as
 * always; in another one `/stator-events-ns/<namespace, URI-encoded>/<scope>/`, so that clusters of the
 * same scope in two namespaces (staging and production on one etcd) keep two logs, and no prefix is
 * inside another (neither `/stator-events/` nor a namespace nested in another).
 */
export function eventLogPrefix(namespace: string, scope: string): string {
  if (namespace === DEFAULT_EVENTS_NAMESPACE) return `/stator-events/${scope}/`;
  return `/stator-events-ns/${encodeURIComponent(namespace)}/${scope}/`;
}

/** etcd's default `--max-txn-ops` is 128: one put per event plus one per stream's head. */
const MAX_EVENTS_PER_APPEND = 100;
/** Attempts of one append when the head moved under it ('any', or a stale cached head). */
const APPEND_ATTEMPTS = 5;
const SEQ_DIGITS = 12;

/**
 * EventStore on etcd v3 under its own prefix (eventLogPrefix: `/stator-events/<scope>/` in the
 * default namespace), outside the cluster prefix so DCS range reads never fetch events.
 *
 * Layout: `<prefix><stream>/<seq, 12 digits>` = JSON of the RecordedEvent, and
 * `<prefix>heads/<stream>` = `{"seq":N,"hash":"..."}`, the stream's last seq and hash, written in
 * the same txn so that `lastSeq` is a single key read and the next append can chain to it. Store
 * order is etcd's mod revision (one txn per append). Heads written by older versions as a bare
 * number mark unchained history: the chain starts after it (`prev` ''). `<prefix>checkpoint` is
 * where retention last cut the log (LogCheckpoint); the events it covers are removed after it is written.
 */
export class EtcdEventStore implements EventStore {
  private readonly client: EtcdClient;
  private readonly prefix: string;
  private readonly headsPrefix: string;
  private readonly checkpointKey: string;
  /** The checkpoint as last read, and its exact stored value, which writeCheckpoint compares. */
  private lastReadCheckpoint: { checkpoint: LogCheckpoint | null; value: string | null } | null = null;
  /** Aborted by close(): ends every subscription. */
  private readonly lifetime = new AbortController();
  /** The head each stream had after our last append or read of it, so a writer's next append is one txn. */
  private readonly knownHeads = new Map<string, StoredHead>();
  private readonly quotaGuard: EtcdQuotaGuard | null;

  constructor(private readonly options: EtcdEventStoreOptions) {
    this.client = new EtcdClient(options);
    this.quotaGuard = options.quota
      ? new EtcdQuotaGuard(options.quota, async () => {
          const { dbSize, dbSizeInUse } = await this.client.status(options.requestTimeoutMs);
          return dbSizeInUse || dbSize;
        })
      : null;
    this.prefix = eventLogPrefix(options.namespace ?? DEFAULT_EVENTS_NAMESPACE, options.scope);
    this.headsPrefix = `${this.prefix}${HEADS}/`;
    this.checkpointKey = `${this.prefix}${CHECKPOINT}`;
  }

  /**
   * Chains the events to the stream's head and writes them in one txn that compares the head
   * key's value with the head they were chained to (so two writers can never fork the chain), and
   * the first new key's absence. The head is the one this store last saw (no read) when it
   * matches `expectedVersion`; a failed compare answers with the current head. Numeric
   * `expectedVersion`: rejects with ExpectedVersionConflict, carrying the stored head, unless the
   * stream's last seq equals it. 'any': appends after whatever head there is, retrying a few
   * times when another writer got there first. At most MAX_EVENTS_PER_APPEND events per call.
   */
  async append(stream: string, events: NewEvent[], expectedVersion: ExpectedVersion): Promise<RecordedEvent[]> {
    assertStreamName(stream);
    return this.appendStreams(
      events.map((event) => ({ ...event, stream })),
      new Map([[stream, expectedVersion]]),
    );
  }

  /** append() for several streams in one txn, each stream's head compared; events keep the order given (IN_TXN). */
  async appendStreams(events: NewEvent[], expected: ReadonlyMap<string, ExpectedVersion>): Promise<RecordedEvent[]> {
    const streams = [...expected.keys()];
    streams.forEach(assertStreamName);
    const unexpected = events.find((event) => !expected.has(event.stream));
    if (unexpected) throw new Error(`append: no expected version for ${unexpected.stream}`);
    if (events.length > MAX_EVENTS_PER_APPEND || streams.length > MAX_STREAMS_PER_APPEND) {
      throw new Error(
        `append of ${events.length} events to ${streams.length} streams exceeds ` +
          `${MAX_EVENTS_PER_APPEND} events or ${MAX_STREAMS_PER_APPEND} streams per append`,
      );
    }
    await this.quotaGuard?.check();
    let heads = new Map(
      await Promise.all(
        streams.map(async (stream): Promise<[string, StoredHead]> => {
          const known = this.knownHeads.get(stream);
          const expectedVersion = expected.get(stream);
          const usable = known && (expectedVersion === 'any' || known.seq === expectedVersion);
          return [stream, usable ? known : await this.readHead(stream)];
        }),
      ),
    );
    for (let attempt = 1; ; attempt++) {
      const conflict = firstConflict(expected, heads);
      if (conflict) throw conflict;
      const outcome = await this.appendAfter(events, heads);
      if ('stored' in outcome) return outcome.stored;
      heads = outcome.currentHeads;
      if (attempt >= APPEND_ATTEMPTS) {
        const [stream, expectedVersion] = [...expected][0];
        throw (
          firstConflict(expected, heads) ?? new ExpectedVersionConflict(stream, expectedVersion, heads.get(stream)!.seq)
        );
      }
    }
  }

  /** With `stream`: that stream from `fromSeq`, by seq. Without: every stream, in store order. */
  async read(filter: EventFilter = {}): Promise<RecordedEvent[]> {
    if (filter.stream === undefined) {
      const all = await this.client.range(this.prefix, { prefix: true }, this.options.requestTimeoutMs);
      return inStoreOrder(all.kvs.filter((kv) => this.isEventKey(kv.key)).map((kv) => ({ kv, stream: null })));
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

  /** One key-range read per range (each bounded by its seqs), merged by mod revision: store order. */
  async readRanges(ranges: StreamRange[]): Promise<RecordedEvent[]> {
    assertRangesWithinLimit(ranges);
    const nonEmpty = ranges.filter((range) => range.toSeq >= range.fromSeq);
    nonEmpty.forEach((range) => assertStreamName(range.stream));
    const results = await Promise.all(
      nonEmpty.map((range) =>
        this.client.range(
          this.eventKey(range.stream, range.fromSeq),
          { rangeEnd: this.eventKey(range.stream, range.toSeq + 1) },
          this.options.requestTimeoutMs,
        ),
      ),
    );
    // A range's keys may run into a nested stream's (`<stream>/postgres/...`): those are left out.
    return inStoreOrder(
      results.flatMap((result, index) => result.kvs.map((kv) => ({ kv, stream: nonEmpty[index].stream }))),
    );
  }

  async streamHeads(): Promise<{ stream: string; seq: number }[]> {
    const heads = await this.client.range(this.headsPrefix, { prefix: true }, this.options.requestTimeoutMs);
    return heads.kvs
      .map((kv) => ({ stream: kv.key.slice(this.headsPrefix.length), seq: parseHead(kv.value).seq }))
      .filter((head) => head.seq > 0);
  }

  async readCheckpoint(): Promise<LogCheckpoint | null> {
    const response = await this.client.range(this.checkpointKey, {}, this.options.requestTimeoutMs);
    const value = response.kvs[0]?.value ?? null;
    const checkpoint = value === null ? null : parseCheckpoint(value);
    this.lastReadCheckpoint = { checkpoint, value };
    return checkpoint;
  }

  /**
   * Compare-and-set on the checkpoint key's exact value as last read by readCheckpoint (`expected`
   * must be what it answered), then one range delete per stream of the seqs the checkpoint covers,
   * stopping early when `signal` aborts.
   */
  async writeCheckpoint(next: LogCheckpoint, expected: LogCheckpoint | null, signal?: AbortSignal): Promise<void> {
    const read = this.lastReadCheckpoint;
    if (read === null || JSON.stringify(read.checkpoint) !== JSON.stringify(expected)) {
      throw new CheckpointConflict('writeCheckpoint needs the checkpoint as readCheckpoint last answered it');
    }
    const value = JSON.stringify(next);
    const result = await this.client.txn(
      {
        compare: [
          read.value === null
            ? { key: this.checkpointKey, target: 'CREATE', createRevision: '0' }
            : { key: this.checkpointKey, target: 'VALUE', value: read.value },
        ],
        success: [{ put: { key: this.checkpointKey, value } }],
      },
      this.options.requestTimeoutMs,
    );
    if (!result.succeeded) throw new CheckpointConflict('another node wrote a checkpoint meanwhile');
    this.lastReadCheckpoint = { checkpoint: next, value };
    for (const [stream, { seq }] of Object.entries(next.streams)) {
      if (signal?.aborted) return;
      assertStreamName(stream);
      await this.client.deleteRange(
        this.eventKey(stream, 1),
        { rangeEnd: this.eventKey(stream, seq + 1) },
        this.options.requestTimeoutMs,
      );
    }
  }

  async lastSeq(stream: string): Promise<number> {
    assertStreamName(stream);
    return (await this.readHead(stream)).seq;
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
      void this.followEvents(seen === null ? null : nextRevision(seen), stop, (event) => subscriber.next(event)).then(
        () => subscriber.complete(),
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
  private async followEvents(
    from: string | null,
    stop: AbortSignal,
    emit: (event: RecordedEvent) => void,
  ): Promise<void> {
    let resumeFrom = from;
    const backoff = new Backoff();
    while (!stop.aborted) {
      try {
        resumeFrom ??= nextRevision(
          (await this.client.range(this.prefix, { prefix: true, countOnly: true }, this.options.requestTimeoutMs))
            .revision,
        );
        // Held until it breaks, as the cluster's watch is (ClusterWatch): a settled log is silent for hours, and a
        // watch restarted after every silence cost each agent a Watch request a minute (issue 35).
        const watch = this.client.watch(
          this.prefix,
          { prefix: true, startRevision: resumeFrom, restartWhenSilentMs: null },
          this.options.requestTimeoutMs,
        );
        await watchUntilBroken(watch, stop, (response) => {
          backoff.reset();
          for (const { type, kv } of response.events) {
            const event = type === 'put' && this.isEventKey(kv.key) ? parseEvent(kv.value) : null;
            if (event) emit(event);
            resumeFrom = nextRevision(kv.modRevision);
          }
        });
      } catch (error) {
        // Compacted: what is left starts at the compaction revision. Otherwise retry from where we were.
        if (error instanceof WatchBrokenError && error.compactRevision) resumeFrom = error.compactRevision;
      }
      await sleep(backoff.next(), undefined, { signal: stop }).catch(() => undefined);
    }
  }

  private async readHead(stream: string): Promise<StoredHead> {
    const response = await this.client.range(this.headKey(stream), {}, this.options.requestTimeoutMs);
    const head = parseHead(response.kvs[0]?.value);
    this.knownHeads.set(stream, head);
    return head;
  }

  /** One txn, conditional on every stream's head being the one in `heads`: the stored events, or the heads found instead. */
  private async appendAfter(
    events: NewEvent[],
    heads: ReadonlyMap<string, StoredHead>,
  ): Promise<{ stored: RecordedEvent[] } | { currentHeads: Map<string, StoredHead> }> {
    const stored = chainStreams(events, heads);
    if (stored.length === 0) return { stored };
    const written = [...new Set(stored.map((event) => event.stream))];
    const newHeads = new Map<string, StoredHead>();
    for (const { stream, seq, hash } of stored)
      newHeads.set(stream, { seq, hash, value: JSON.stringify({ seq, hash }) });
    const compare: TxnCompare[] = written.flatMap((stream): TxnCompare[] => {
      const head = heads.get(stream)!;
      return [
        head.value === null
          ? { key: this.headKey(stream), target: 'CREATE', createRevision: '0' }
          : { key: this.headKey(stream), target: 'VALUE', value: head.value },
        // Guards the events even if a head was lost: an existing event is never overwritten.
        { key: this.eventKey(stream, head.seq + 1), target: 'CREATE', createRevision: '0' },
      ];
    });
    const ordered = written.length > 1;
    const result = await this.client.txn(
      {
        compare,
        success: [
          ...stored.map((event, index) => ({
            put: {
              key: this.eventKey(event.stream, event.seq),
              value: JSON.stringify(ordered ? { ...event, [IN_TXN]: index } : event),
            },
          })),
          ...written.map((stream) => ({ put: { key: this.headKey(stream), value: newHeads.get(stream)!.value! } })),
        ],
        failure: written.map((stream) => ({ range: { key: this.headKey(stream) } })),
      },
      this.options.requestTimeoutMs,
    );
    if (!result.succeeded) {
      const currentHeads = new Map(heads);
      written.forEach((stream, index) => {
        const head = parseHead(result.responses[index]?.kvs[0]?.value);
        currentHeads.set(stream, head);
        this.knownHeads.set(stream, head);
      });
      return { currentHeads };
    }
    for (const [stream, head] of newHeads) this.knownHeads.set(stream, head);
    return { stored };
  }

  private isEventKey(key: string): boolean {
    return !key.startsWith(this.headsPrefix) && key !== this.checkpointKey;
  }

  private eventKey(stream: string, seq: number): string {
    return `${this.prefix}${stream}/${String(seq).padStart(SEQ_DIGITS, '0')}`;
  }

  private headKey(stream: string): string {
    return `${this.prefix}${HEADS}/${stream}`;
  }
}
