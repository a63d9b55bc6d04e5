import { readIsoTimestamp } from '../../common/iso-timestamp';
import { isoWithOffset } from '../../ha/node-events';
import { UsageError } from '../args';
import { bodyMessage } from '../client';
import { isYes } from '../prompt';
import { becamePrimary, becameReplica, Progress } from '../progress';
import { ClusterDocument, Ctl, exampleTime, leaderOf, OperationFailed, readCluster, timestamp } from '../context';
import { renderCluster } from './list';

/** How long after the node's answer statorctl waits for the new leader to be primary and the old one to follow. */
const SETTLE_MS = 30_000;

type Kind = 'switchover' | 'failover';

/**
 * `switchover` and `failover`, as patronictl asks: the topology, then `Primary [node1]:`,
 * `Candidate ['node2', 'node3'] []:`, `When should the switchover take place (...) [now]:` and the
 * confirmation; `--force` asks nothing. An immediate one shows its phases from the event stream
 * with the elapsed time, and ends with the outcome and the new topology.
 */
export async function handover(ctl: Ctl, kind: Kind): Promise<number> {
  const { values } = ctl.line;
  const now = ctl.io.now ?? Date.now;
  if (values.site !== undefined && values.candidate !== undefined)
    throw new UsageError('--candidate and --site are mutually exclusive options');
  const cluster = await readCluster(ctl.client);
  const leader = leaderOf(cluster);
  if (kind === 'switchover' && !leader)
    throw new OperationFailed(`This cluster has no leader: a switchover needs one (use failover)`);
  if (ctl.line.format === 'table') ctl.io.stdout(`Current cluster topology\n${renderCluster(ctl, cluster, false)}`);
  const ask = async (question: string): Promise<string> => {
    const answer = await ctl.io.prompter.ask(question);
    if (answer === null) throw new OperationFailed(`no answer (the input ended): aborting ${kind}`);
    return answer;
  };
  const force = values.force === true;

  let from = values.leader ?? values.primary;
  if (kind === 'switchover') {
    if (from === undefined) from = force ? leader : (await ask(`Primary [${leader}]: `)) || leader;
    if (from !== leader) throw new OperationFailed(`Member ${from} is not the leader of cluster ${cluster.scope}`);
  }

  // --site (Patroni's branch): the candidates are that site's; a switchover without one goes to any member of it.
  const site = values.site;
  if (site !== undefined && !cluster.members.some((member) => member.site === site))
    throw new OperationFailed(`Site ${site} does not exist in cluster ${cluster.scope}`);
  const candidates = eligible(cluster, leader, site);
  let candidate = values.candidate;
  if (candidate === undefined && !force)
    candidate = (await ask(`Candidate ${pythonList(candidates)} []: `)) || undefined;
  if (kind === 'failover' && !candidate)
    throw new OperationFailed('Failover could be performed only to a specific candidate');
  if (kind === 'switchover' && !candidate && candidates.length === 0)
    throw new OperationFailed('No candidates found to switchover to');
  if (candidate && candidate === leader)
    throw new OperationFailed(`Member ${candidate} is already the leader of cluster ${cluster.scope}`);
  if (candidate && !candidates.includes(candidate)) {
    throw new OperationFailed(
      `Member ${candidate} does not exist in ${site ? `site ${site} of ` : ''}cluster ${cluster.scope} or is tagged as nofailover`,
    );
  }

  let scheduledAt: string | undefined;
  if (kind === 'switchover') {
    let when = values.scheduled;
    if (when === undefined && !force) {
      when = (await ask(`When should the switchover take place (e.g. ${exampleTime(now())} )  [now]: `)) || 'now';
    }
    scheduledAt = when === undefined || when === 'now' ? undefined : scheduleTime(when, values.scheduled !== undefined);
    if (scheduledAt && cluster.pause) throw new OperationFailed("Can't schedule switchover in the paused state");
  }

  if (!force) {
    const demoting =
      (leader ? `, demoting current leader ${leader}` : '') + siteChange(cluster, leader, candidate, site);
    const question = scheduledAt
      ? `Are you sure you want to schedule switchover of cluster ${cluster.scope} at ${scheduledAt}${demoting}? [y/N]: `
      : `Are you sure you want to ${kind} cluster ${cluster.scope}${demoting}? [y/N]: `;
    if (!isYes(await ask(question))) throw new OperationFailed(`Aborting ${scheduledAt ? 'scheduled ' : ''}${kind}`);
  }

  const body: Record<string, string> = kind === 'switchover' ? { leader: from! } : {};
  if (candidate) body.candidate = candidate;
  if (site && kind === 'switchover') body.site = site;
  if (scheduledAt) body.scheduled_at = scheduledAt;

  if (scheduledAt) {
    const answer = await ctl.client.send('POST', `/${kind}`, body);
    if (answer.status !== 202 && answer.status !== 200)
      throw new OperationFailed(`${kind} failed: ${bodyMessage(answer.text)}`);
    ctl.io.stdout(`${timestamp(now())} ${answer.text.trim()}\n`);
    return 0;
  }
  const timelineBefore = cluster.members.find((member) => member.name === leader)?.timeline;
  return runWithProgress(ctl, kind, body, leader, candidate, timelineBefore);
}

async function runWithProgress(
  ctl: Ctl,
  kind: Kind,
  body: Record<string, string>,
  leader: string | undefined,
  candidate: string | undefined,
  timelineBefore: number | undefined,
): Promise<number> {
  const now = ctl.io.now ?? Date.now;
  const write = (text: string) => ctl.io.stdout(text);
  const progress = await Progress.start(ctl.client, write, { now });
  try {
    progress.line(`POST ${ctl.client.base}/${kind} ${JSON.stringify(body)}`);
    // The node answers once the DCS shows the new leader, within 2·max(10, loop_wait) s.
    const answer = await ctl.client.send('POST', `/${kind}`, body, Math.max(ctl.client.timeoutMs, 120_000));
    if (answer.status !== 200) {
      progress.line(`${kind} failed: HTTP ${answer.status}: ${bodyMessage(answer.text)}`);
      throw new OperationFailed(`${kind} failed: ${bodyMessage(answer.text)}`);
    }
    progress.line(`node answered: ${answer.text.trim()}`);
    const newLeader = /"([^"]+)"\s*$/.exec(answer.text.trim())?.[1] ?? candidate;
    const promoted = await progress.waitFor(becamePrimary(newLeader, leader), SETTLE_MS);
    const rejoined = leader && promoted ? await progress.waitFor(becameReplica(leader), SETTLE_MS) : null;
    const seconds = ((now() - progress.startMs) / 1000).toFixed(1);
    if (!promoted) {
      progress.line(
        `${kind} outcome unclear: no primary seen in the event stream within ${SETTLE_MS / 1000} s (see statorctl list)`,
      );
      return 1;
    }
    const tail = !leader ? '' : rejoined ? `, ${leader} follows it as a replica` : `, ${leader} has not rejoined yet`;
    progress.line(`${kind} completed in ${seconds}s: ${promoted.node} is the leader${tail}`);
  } finally {
    progress.stop();
  }
  ctl.io.stdout(renderCluster(ctl, await settledCluster(ctl, leader, timelineBefore), false));
  return 0;
}

/**
 * The topology once the member keys tell the outcome (the new leader on a newer timeline, every
 * member on it and running), or as it is after 10 s: member keys are written once per loop_wait.
 */
async function settledCluster(
  ctl: Ctl,
  oldLeader: string | undefined,
  timelineBefore: number | undefined,
): Promise<ClusterDocument> {
  const deadline = performance.now() + 10_000;
  for (;;) {
    const cluster = await readCluster(ctl.client);
    const leader = cluster.members.find((member) => member.role === 'leader');
    const settled =
      leader !== undefined &&
      leader.name !== oldLeader &&
      (timelineBefore === undefined || (leader.timeline ?? 0) > timelineBefore) &&
      cluster.members.every(
        (member) => member.timeline === leader.timeline && ['running', 'streaming'].includes(member.state),
      );
    if (settled || performance.now() >= deadline) return cluster;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** The members that may take over: not the leader, not tagged nofailover, of `site` when one is given. */
export function eligible(cluster: ClusterDocument, leader: string | undefined, site?: string): string[] {
  return cluster.members
    .filter(
      (member) =>
        member.name !== leader && !isTrue(member.tags?.nofailover) && (site === undefined || member.site === site),
    )
    .map((member) => member.name)
    .sort();
}

/** ` in site dc1 and switching to site dc2` when the handover leaves the leader's site, as Patroni's branch asks. */
function siteChange(
  cluster: ClusterDocument,
  leader: string | undefined,
  candidate: string | undefined,
  site: string | undefined,
): string {
  const currentSite = cluster.members.find((member) => member.name === leader)?.site;
  const targetSite = candidate ? cluster.members.find((member) => member.name === candidate)?.site : site;
  return currentSite && targetSite && currentSite !== targetSite
    ? ` in site ${currentSite} and switching to site ${targetSite}`
    : '';
}

function isTrue(value: unknown): boolean {
  return value === true || (typeof value === 'string' && /^(true|yes|on|1)$/i.test(value));
}

/** `['node2', 'node3']` as patronictl (Python) prints a list. */
export function pythonList(items: string[]): string {
  return `[${items.map((item) => `'${item}'`).join(', ')}]`;
}

/**
 * A schedule as the API takes it (ISO 8601 with offset): a time with an offset as given, or one
 * without it in local time, as patronictl reads it. The calendar check is the API's own.
 * @throws UsageError (from --scheduled) or OperationFailed (typed at the prompt) for anything else.
 */
export function scheduleTime(value: string, fromFlag: boolean, flag = '--scheduled'): string {
  const fail = (message: string) => (fromFlag ? new UsageError(`${flag}: ${message}`) : new OperationFailed(message));
  const reading = readIsoTimestamp(value);
  if (reading.kind === 'valid') return reading.text;
  if (reading.kind === 'invalid')
    throw fail(`'${value}': ${reading.reason} (e.g. 2030-01-31T12:00 or 2030-01-31T12:00+01:00)`);
  const [y, mo, d, h, mi, s = '0'] = value.trim().split(/[-T :.,]/i);
  return isoWithOffset(new Date(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s)).getTime());
}
