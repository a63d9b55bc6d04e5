import { RecordedEvent } from '../events/event';
import { initialProjections, rebuildProjections, ServedProjections } from '../events/event-log';
import { canonicalJson, ChainProblemKind, verifyChain } from '../events/hash-chain';
import { LogCheckpoint } from '../events/log-checkpoint';
import { SourceError } from './audit-source';
import { replayTransitions } from './transition-replay';

/** A finding of `stator audit verify`; positioned when it concerns one event. */
export interface AuditProblem {
  message: string;
  stream?: string;
  seq?: number;
  /** Index of the event in the audited list. */
  index?: number;
}

/** One line of the verify report. */
export interface CheckResult {
  title: string;
  status: 'passed' | 'failed' | 'skipped';
  /** What was checked and found, in a few words. */
  summary: string;
  problems: AuditProblem[];
}

export interface VerifyReport {
  eventsChecked: number;
  checks: CheckResult[];
}

export interface VerifyOptions {
  /** Where retention cut the log: chains start after it, and the projections are folded on from it. */
  checkpoint?: LogCheckpoint | null;
  /** A node's API base URL: its `/history` and `/schedule` are compared with the log's projections. */
  api?: string;
  fetch?: typeof fetch;
}

const API_TIMEOUT_MS = 5000;

const KIND_WORDS: Record<ChainProblemKind, string> = {
  altered: 'altered',
  removed: 'removed',
  reordered: 'reordered',
  'broken-link': 'broken link',
};

/**
 * Every check of `stator audit verify` over `events` (in source order): the hash chains, the
 * replay of the node machines' transitions, the machines' final states and, with `options.api`,
 * the node's served `/history` and `/schedule` against the projections rebuilt from the log.
 * @throws SourceError when the API does not answer `/history`.
 */
export async function verifyLog(events: RecordedEvent[], options: VerifyOptions = {}): Promise<VerifyReport> {
  const checkpoint = options.checkpoint ?? null;
  const checks = [checkChains(events, checkpoint), ...checkReplay(events, checkpoint)];
  if (options.api)
    checks.push(...(await checkServedProjections(events, checkpoint, options.api, options.fetch ?? fetch)));
  return { eventsChecked: events.length, checks };
}

function checkChains(events: RecordedEvent[], checkpoint: LogCheckpoint | null): CheckResult {
  const problems = verifyChain(events, checkpoint?.streams).map((problem) => ({
    ...problem,
    message: `${KIND_WORDS[problem.kind]}: ${problem.message}`,
  }));
  const streams = new Set(events.map((event) => event.stream)).size;
  const unchained = events.filter((event) => event.hash === undefined).length;
  const before = unchained > 0 ? ` (${unchained} written before the chain existed, not covered)` : '';
  const cut = checkpoint
    ? `; ${count(Object.keys(checkpoint.streams).length, 'stream')} ${Object.keys(checkpoint.streams).length === 1 ? 'starts' : 'start'} at the retention checkpoint of ${checkpoint.cutAt}`
    : '';
  return result(
    'hash chains',
    problems,
    `${count(events.length, 'event')} in ${count(streams, 'stream')}, every link intact${before}${cut}`,
  );
}

function checkReplay(events: RecordedEvent[], checkpoint: LogCheckpoint | null): CheckResult[] {
  const replay = replayTransitions(events, new Set(Object.keys(checkpoint?.streams ?? {})));
  const machines = replay.endings.length;
  const endings = replay.endings
    .filter((ending) => ending.replayed !== null && ending.replayed !== ending.last.to)
    .map((ending) => ({
      stream: ending.stream,
      seq: ending.last.seq,
      index: ending.lastIndex,
      message: `the replayed machine ends in ${ending.replayed}, the log's last transition in ${ending.last.to}`,
    }));
  return [
    result(
      'machine replay',
      replay.problems,
      `${count(replay.transitions, 'transition')} of ${count(machines, 'node machine')} replayed, all legal`,
    ),
    result(
      'final states',
      endings,
      `${count(machines, 'node machine')} ${machines === 1 ? 'ends where its log says' : 'end where their logs say'}`,
    ),
  ];
}

async function checkServedProjections(
  events: RecordedEvent[],
  checkpoint: LogCheckpoint | null,
  api: string,
  fetchFn: typeof fetch,
): Promise<CheckResult[]> {
  const rebuilt = rebuildProjections(
    events,
    checkpoint ? { ...initialProjections(), ...checkpoint.projections } : undefined,
  );
  const history = await getJson(fetchFn, api, '/history');
  if (history.status !== 200) throw new SourceError(`${api}/history answered HTTP ${history.status}`);
  const schedule = await getJson(fetchFn, api, '/schedule');
  return [
    result(
      `/history of ${api}`,
      compareHistory(history.body, rebuilt),
      `${count(rebuilt.history.length, 'entry', 'entries')}, as the log tells`,
    ),
    schedule.status === 200
      ? result(
          `/schedule of ${api}`,
          compareSchedule(schedule.body, rebuilt),
          `${count(rebuilt.schedule.length, 'operation')}, as the log tells`,
        )
      : {
          title: `/schedule of ${api}`,
          status: 'skipped',
          summary: `not served (HTTP ${schedule.status}), not compared`,
          problems: [],
        },
  ];
}

/** Entries compared as [timeline, lsn, reason]: the time and new leader are not in every reference's history. */
function compareHistory(served: unknown, rebuilt: ServedProjections): AuditProblem[] {
  if (!Array.isArray(served))
    return [{ message: `/history: not a JSON array: ${canonicalJson(served).slice(0, 200)}` }];
  const essential = (entry: unknown) => canonicalJson(Array.isArray(entry) ? entry.slice(0, 3) : entry);
  const problems: AuditProblem[] = [];
  for (let i = 0; i < Math.max(served.length, rebuilt.history.length); i++) {
    const fromApi = i < served.length ? essential(served[i]) : 'nothing';
    const fromLog = i < rebuilt.history.length ? essential(rebuilt.history[i]) : 'nothing';
    if (fromApi !== fromLog)
      problems.push({ message: `/history entry ${i + 1}: served ${fromApi}, the log gives ${fromLog}` });
  }
  return problems;
}

function compareSchedule(served: unknown, rebuilt: ServedProjections): AuditProblem[] {
  const fromApi = canonicalJson(served);
  const fromLog = canonicalJson(rebuilt.schedule);
  return fromApi === fromLog ? [] : [{ message: `/schedule: served ${fromApi}, the log gives ${fromLog}` }];
}

async function getJson(fetchFn: typeof fetch, api: string, path: string): Promise<{ status: number; body: unknown }> {
  const url = `${api.replace(/\/+$/, '')}${path}`;
  let response: Response;
  try {
    response = await fetchFn(url, { signal: AbortSignal.timeout(API_TIMEOUT_MS) });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    throw new SourceError(`${url} unreachable: ${cause ?? (error as Error).message}`);
  }
  const text = await response.text();
  if (response.status !== 200) return { status: response.status, body: null };
  try {
    return { status: 200, body: JSON.parse(text) as unknown };
  } catch {
    throw new SourceError(`${url} answered 200 with something that is not JSON: ${text.slice(0, 120)}`);
  }
}

function result(title: string, problems: AuditProblem[], summaryWhenPassed: string): CheckResult {
  if (problems.length === 0) return { title, status: 'passed', summary: summaryWhenPassed, problems };
  return { title, status: 'failed', summary: count(problems.length, 'problem'), problems };
}

/** `1 problem`, `2 problems`. */
export function count(n: number, singular: string, plural = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : plural}`;
}
