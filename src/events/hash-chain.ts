import { createHash } from 'node:crypto';
import { NewEvent, RecordedEvent } from './event';
import { boundEvent } from './event-bounds';

/**
 * Tamper evidence for the event log: every stored event carries `prev`, the hash of the event
 * before it in the same stream ('' for the first), and `hash`, the SHA-256 (hex) of the canonical
 * JSON of its content and `prev`. Altering, removing or reordering stored events breaks the chain
 * where it happened, which `verifyChain` reports.
 */

/** What a store knows about a stream's end: the last seq and its hash ('' when unchained or empty). */
export interface ChainHead {
  seq: number;
  hash: string;
}

/** An event as a store writes it: positioned and chained. */
export type ChainedEvent = RecordedEvent & { prev: string; hash: string };

export type ChainProblemKind = 'altered' | 'removed' | 'reordered' | 'broken-link';

/** One break of a stream's chain, at the event where it shows. */
export interface ChainProblem {
  kind: ChainProblemKind;
  stream: string;
  seq: number;
  /** Index of the event in the list given to verifyChain. */
  index: number;
  message: string;
}

/**
 * JSON with object keys sorted (by UTF-16 code units, as RFC 8785) and no whitespace, so the same
 * value always gives the same text. Follows JSON.stringify otherwise: `toJSON` is honoured,
 * undefined and function members are left out (null in arrays), non-finite numbers are null.
 */
export function canonicalJson(value: unknown): string {
  return serialize(value) ?? 'null';
}

function serialize(value: unknown): string | undefined {
  if (value === null || typeof value === 'boolean' || typeof value === 'number' || typeof value === 'string') {
    return JSON.stringify(value);
  }
  if (typeof value !== 'object') return undefined; // undefined, function, symbol: left out like JSON.stringify
  const withToJson = value as { toJSON?: () => unknown };
  if (typeof withToJson.toJSON === 'function') return serialize(withToJson.toJSON());
  if (Array.isArray(value)) return `[${value.map((item) => serialize(item) ?? 'null').join(',')}]`;
  const members = Object.keys(value)
    .sort()
    .map((key) => {
      const member = serialize((value as Record<string, unknown>)[key]);
      return member === undefined ? undefined : `${JSON.stringify(key)}:${member}`;
    })
    .filter((member): member is string => member !== undefined);
  return `{${members.join(',')}}`;
}

/** SHA-256 (hex) of the canonical JSON of the event's content and `prev`; stored `prev`/`hash` fields are not part of it. */
export function eventHash(event: Omit<RecordedEvent, 'prev' | 'hash'>, prev: string): string {
  const { stream, seq, type, at, node, from, to, cause, data } = event;
  return createHash('sha256')
    .update(canonicalJson({ stream, seq, type, at, node, from, to, cause, data, prev }))
    .digest('hex');
}

/**
 * The events a store writes after `head`: numbered on from it and chained to it. Each is first
 * brought within the size cap (event-bounds.ts), so the chain covers exactly what is stored, and
 * passed through JSON, so that what is hashed is exactly what a reader parses back.
 */
export function chainEvents(stream: string, events: NewEvent[], head: ChainHead): ChainedEvent[] {
  let prev = head.hash;
  return events.map((unbounded, index) => {
    const event = boundEvent(unbounded);
    const content = JSON.parse(
      JSON.stringify({
        stream,
        seq: head.seq + index + 1,
        type: event.type,
        at: event.at,
        node: event.node,
        from: event.from,
        to: event.to,
        cause: event.cause,
        data: event.data,
      }),
    ) as RecordedEvent;
    const hash = eventHash(content, prev);
    const chained = { ...content, prev, hash };
    prev = hash;
    return chained;
  });
}

/**
 * chainEvents over events of several streams, in the order given: each is numbered on from its
 * stream's head in `heads` (an empty head when absent) and chained to the event before it in its stream.
 */
export function chainStreams(events: NewEvent[], heads: ReadonlyMap<string, ChainHead>): ChainedEvent[] {
  const current = new Map(heads);
  return events.map((event) => {
    const [chained] = chainEvents(event.stream, [event], current.get(event.stream) ?? { seq: 0, hash: '' });
    current.set(event.stream, { seq: chained.seq, hash: chained.hash });
    return chained;
  });
}

/**
 * Checks every stream's chain in `events` (any mix of streams, in the order given, e.g. store
 * order or an export's lines):
 * - reordered: an event comes after a later seq of its stream;
 * - altered: its content does not give its hash, or it has no hash after chained events;
 * - removed: seqs are missing before it (the break of `prev` there is that removal);
 * - broken-link: its `prev` is not the hash of the event before it (that one was altered, hash included).
 * Events written before the chain existed (no `hash`) are accepted, and a chain may start after
 * them with `prev` ''. A removal at a stream's end leaves no trace in the events themselves.
 * A stream with a checkpoint (retention removed its beginning) starts after it: its first event
 * must be the checkpoint's seq + 1 with `prev` the checkpoint's hash; events the checkpoint covers
 * (still waiting for removal) are not checked.
 */
export function verifyChain(events: RecordedEvent[], checkpoints: Record<string, ChainHead> = {}): ChainProblem[] {
  const byStream = new Map<string, { event: RecordedEvent; index: number }[]>();
  events.forEach((event, index) => {
    if (event.seq <= (checkpoints[event.stream]?.seq ?? 0)) return;
    const entries = byStream.get(event.stream) ?? [];
    entries.push({ event, index });
    byStream.set(event.stream, entries);
  });
  const problems: ChainProblem[] = [];
  const report = (kind: ChainProblemKind, entry: { event: RecordedEvent; index: number }, message: string) =>
    problems.push({ kind, stream: entry.event.stream, seq: entry.event.seq, index: entry.index, message });

  for (const entries of byStream.values()) {
    // Order first, so that a swap is one problem rather than a gap and a repeat.
    let highest = 0;
    for (const entry of entries) {
      if (entry.event.seq <= highest) {
        report(
          'reordered',
          entry,
          entry.event.seq === highest ? `repeats #${highest}` : `comes after #${highest} of its stream`,
        );
      }
      highest = Math.max(highest, entry.event.seq);
    }
    // Then the links, along the stream in seq order (first occurrence of a repeated seq).
    const inSeqOrder = [...entries]
      .sort((a, b) => a.event.seq - b.event.seq)
      .filter((entry, i, sorted) => i === 0 || sorted[i - 1].event.seq !== entry.event.seq);
    const checkpoint = checkpoints[entries[0].event.stream];
    let previous: Pick<RecordedEvent, 'seq' | 'hash'> | null = checkpoint
      ? { seq: checkpoint.seq, hash: checkpoint.hash }
      : null;
    let chainedFrom: number | null = checkpoint?.hash ? checkpoint.seq : null;
    // A stripped hash is reported once, at that event: the link after it cannot be checked.
    let previousStripped = false;
    for (const entry of inSeqOrder) {
      const { event } = entry;
      const expectedSeq = (previous?.seq ?? 0) + 1;
      const stripped = event.hash === undefined && chainedFrom !== null;
      if (stripped) {
        report('altered', entry, `has no hash, though its stream is chained from #${chainedFrom}`);
      } else if (event.hash !== undefined) {
        chainedFrom ??= event.seq;
        if (eventHash(event, event.prev ?? '') !== event.hash)
          report('altered', entry, 'its content does not match its hash');
      }
      if (event.seq > expectedSeq) {
        const missing = event.seq - expectedSeq === 1 ? `#${expectedSeq} is` : `#${expectedSeq}..#${event.seq - 1} are`;
        report('removed', entry, `${missing} missing before it`);
      } else if (event.hash !== undefined && !previousStripped && (event.prev ?? '') !== (previous?.hash ?? '')) {
        const of =
          checkpoint && previous?.seq === checkpoint.seq ? `the checkpoint's #${checkpoint.seq}` : `#${previous?.seq}`;
        report(
          'broken-link',
          entry,
          previous
            ? `its prev is not the hash of ${of} (altered along with its hash?)`
            : 'the first event of its stream has a prev',
        );
      }
      previous = event;
      previousStripped = stripped;
    }
  }
  return problems.sort((a, b) => a.index - b.index);
}
