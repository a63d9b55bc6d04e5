import { stringify } from 'yaml';
import { shownEventTime } from '../../common/recorded-event';
import { RecordedEvent } from '../../events/event';
import { runAudit } from '../../audit/audit-cli';
import { limitOf } from '../args';
import { ApiClient, ApiError } from '../client';
import { renderData, renderTable } from '../format';
import { describeEvent } from '../progress';
import { Ctl, OperationFailed } from '../context';

/** The query string of `/events` from the filter flags. */
export function eventQuery(ctl: Ctl): URLSearchParams {
  const { values } = ctl.line;
  const query = new URLSearchParams();
  if (values.stream) query.set('stream', values.stream);
  if (values.node) query.set('node', values.node);
  if (values.type) query.set('type', values.type);
  if (values.since) query.set('since', values.since);
  const limit = limitOf(values.limit);
  if (limit !== undefined) query.set('limit', String(limit));
  return query;
}

/** What changed: the machine transition, an HA verdict's sentence, or the cause of a fact. */
export function eventChange(event: RecordedEvent): string {
  if (event.type === 'ha.verdict' && typeof event.data?.verdict === 'string') return event.data.verdict;
  return event.from !== null || event.to !== null
    ? `${event.from ?? ''} -> ${event.to ?? ''} (${event.cause})`
    : event.cause;
}

/** One event on one line: time, node, type, transition or cause, and what it means when progress lines know. */
export function eventLine(event: RecordedEvent): string {
  const change = eventChange(event);
  const meaning = describeEvent(event);
  return `${shownEventTime(event.at)}  ${event.node.padEnd(8)} ${event.type.padEnd(22)} ${change}${meaning ? `  | ${meaning}` : ''}`;
}

/** `events`: a page of the log (filters, `--limit`), or with `--follow` the live stream until Ctrl-C. */
export async function events(ctl: Ctl): Promise<number> {
  const query = eventQuery(ctl);
  const format = ctl.line.format;
  if (!ctl.line.values.follow) {
    const page = await ctl.client.getJson<RecordedEvent[]>(`/events?${query}`);
    if (format !== 'table') ctl.io.stdout(renderData(page, format));
    else if (page.length === 0) ctl.io.stdout('No events\n');
    else {
      const columns = ['At', 'Node', 'Stream', 'Type', 'Change'];
      const rows = page.map((e) => [shownEventTime(e.at), e.node, e.stream, e.type, eventChange(e)]);
      ctl.io.stdout(renderTable({ columns, rows }));
    }
    return 0;
  }
  // A limit without since would replay nothing: the stream replays only with since.
  query.delete('limit');
  const abort = new AbortController();
  const { ended } = await ctl.client.stream(
    `/events/stream${query.size > 0 ? `?${query}` : ''}`,
    (message) => {
      let event: RecordedEvent;
      try {
        event = JSON.parse(message.data) as RecordedEvent;
      } catch {
        return;
      }
      if (format === 'json') ctl.io.stdout(`${JSON.stringify(event)}\n`);
      else if (format === 'yaml') ctl.io.stdout(`---\n${stringify(event, { lineWidth: 0 })}`);
      else ctl.io.stdout(`${eventLine(event)}\n`);
    },
    abort.signal,
  );
  const outcome = await Promise.race([
    ended.then(() => 'ended' as const),
    (ctl.io.interrupted ?? new Promise<never>(() => undefined)).then(() => 'interrupted' as const),
  ]);
  abort.abort();
  if (outcome === 'ended') throw new OperationFailed('the node closed the event stream');
  return 0;
}

/** Every stored event through `GET /events`, following its `Link: rel="next"` pages back to the first; in store order. */
export async function readAllEvents(client: ApiClient): Promise<RecordedEvent[]> {
  const pages: RecordedEvent[][] = [];
  let path: string | null = '/events?limit=10000';
  while (path) {
    const answer = await client.send('GET', path, undefined, Math.max(client.timeoutMs, 60_000));
    if (answer.status !== 200) throw new ApiError(client.base + path, answer.status, answer.text);
    pages.push(JSON.parse(answer.text) as RecordedEvent[]);
    const link = answer.headers.get('link');
    path = link ? (/<([^>]+)>;\s*rel="next"/.exec(link)?.[1] ?? null) : null;
  }
  return pages.reverse().flat();
}

/**
 * `audit verify|export|replay`: `stator audit` over the log read through the API (every page of
 * GET /events); verify also compares the node's served /history and /schedule with the log.
 */
export async function audit(ctl: Ctl): Promise<number> {
  const [command] = ctl.line.args;
  const { values } = ctl.line;
  const events = await readAllEvents(ctl.client);
  const argv = [command];
  if (command === 'verify') argv.push('--api', ctl.client.base);
  if (values.from) argv.push('--from', values.from);
  if (values.to) argv.push('--to', values.to);
  if (values.at) argv.push('--at', values.at);
  if (command === 'replay' && ctl.line.format === 'json') argv.push('--json');
  // verify reads /history and /schedule with statorctl's credentials and TLS.
  const viaClient = (async (url: string | URL) => {
    const answer = await ctl.client.send('GET', String(url).slice(ctl.client.base.length));
    return new Response(answer.text, { status: answer.status });
  }) as typeof fetch;
  const code = await runAudit(
    argv,
    { stdout: ctl.io.stdout, stderr: ctl.io.stderr, env: ctl.io.env, fetch: viaClient },
    {
      kind: 'events',
      description: `GET ${ctl.client.base}/events`,
      events,
    },
  );
  return code;
}
