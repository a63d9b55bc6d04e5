import { ApiClient, bodyMessage } from '../client';
import { isYes } from '../prompt';
import { Progress, taskEnded } from '../progress';
import { memberBase } from '../target';
import { ClusterMember, Ctl, exampleTime, OperationFailed, readCluster, selectMembers } from '../context';
import { scheduleTime } from './handover';

/** A reinitialize copies the leader's data directory: allowed this long before statorctl stops following it. */
const REINIT_LIMIT_MS = 30 * 60_000;
const RESTART_LIMIT_MS = 10 * 60_000;

function memberClient(ctl: Ctl, member: ClusterMember): ApiClient {
  if (!member.api_url) throw new OperationFailed(`member ${member.name} has no api_url in its member key`);
  return ctl.client.forBase(memberBase(member.api_url));
}

async function confirm(ctl: Ctl, question: string, what: string): Promise<void> {
  if (ctl.line.values.force) return;
  const answer = await ctl.io.prompter.ask(question);
  if (!isYes(answer)) throw new OperationFailed(`Aborting ${what}`);
}

const names = (members: ClusterMember[]) => members.map((member) => member.name).join(', ');

/** `restart [MEMBER...]`: each member in turn, with its phases from the event stream; `--scheduled` schedules instead. */
export async function restart(ctl: Ctl): Promise<number> {
  const { values } = ctl.line;
  const now = ctl.io.now ?? Date.now;
  const cluster = await readCluster(ctl.client);
  let members = selectMembers(cluster, ctl.line.args);
  const role = values.role ?? 'any';
  if (!['leader', 'primary', 'replica', 'any'].includes(role))
    throw new OperationFailed(`--role: leader, replica or any, got '${role}'`);
  if (role !== 'any')
    members = members.filter((member) => (role === 'replica' ? member.role === 'replica' : member.role === 'leader'));
  if (members.length === 0) throw new OperationFailed('no member matches');
  let when = values.scheduled;
  if (when === undefined && !values.force) {
    when =
      (await ctl.io.prompter.ask(`When should the restart take place (e.g. ${exampleTime(now())})  [now]: `)) || 'now';
  }
  const schedule =
    when === undefined || when === 'now' ? undefined : scheduleTime(when, values.scheduled !== undefined);
  await confirm(ctl, `Are you sure you want to restart members ${names(members)}? [y/N]: `, 'restart');
  const body: Record<string, unknown> = {};
  if (values.pending) body.restart_pending = true;
  if (schedule) body.schedule = schedule;

  let failed = 0;
  if (schedule) {
    for (const member of members) {
      const answer = await memberClient(ctl, member).send('POST', '/restart', body);
      failed += report(
        ctl,
        answer.status,
        answer.text,
        `restart scheduled on member ${member.name}`,
        `restart for member ${member.name}`,
      );
    }
    return failed > 0 ? 1 : 0;
  }
  const progress = await Progress.start(ctl.client, (text) => ctl.io.stdout(text), {
    now,
    nodes: members.map((m) => m.name),
  });
  try {
    for (const member of members) {
      progress.line(`POST ${memberClient(ctl, member).base}/restart ${JSON.stringify(body)}`);
      const answer = await memberClient(ctl, member).send('POST', '/restart', body, RESTART_LIMIT_MS);
      // The node answers once PostgreSQL accepts connections again; its last events may still be on their way.
      if (answer.status === 200) await progress.waitFor(taskEnded(member.name, 'restart'), 3000);
      progress.line(
        answer.status === 200
          ? `${member.name} restarted`
          : `${member.name} restart failed: HTTP ${answer.status}: ${bodyMessage(answer.text)}`,
      );
      failed += report(
        ctl,
        answer.status,
        answer.text,
        `restart on member ${member.name}`,
        `restart for member ${member.name}`,
      );
    }
  } finally {
    progress.stop();
  }
  return failed > 0 ? 1 : 0;
}

/** patronictl's result lines: `Success: <what>` or `Failed: <what>, status code=503, (<text>)`; 1 when failed. */
function report(ctl: Ctl, status: number, text: string, success: string, failure: string): number {
  if (status === 200 || status === 202) {
    ctl.io.stdout(`Success: ${success}\n`);
    return 0;
  }
  ctl.io.stdout(`Failed: ${failure}, status code=${status}, (${bodyMessage(text)})\n`);
  return 1;
}

/** `reload [MEMBER...]`. */
export async function reload(ctl: Ctl): Promise<number> {
  const cluster = await readCluster(ctl.client);
  const members = selectMembers(cluster, ctl.line.args);
  await confirm(ctl, `Are you sure you want to reload members ${names(members)}? [y/N]: `, 'reload');
  let failed = 0;
  for (const member of members) {
    const answer = await memberClient(ctl, member).send('POST', '/reload', {});
    if (answer.status === 202 || answer.status === 200)
      ctl.io.stdout(`Reload request received for member ${member.name} (${answer.text.trim()})\n`);
    else failed += report(ctl, answer.status, answer.text, '', `reload for member ${member.name}`);
  }
  return failed > 0 ? 1 : 0;
}

/** `reinit MEMBER...`: each replica rebuilt from the leader in turn, followed until its task ends. */
export async function reinit(ctl: Ctl): Promise<number> {
  const now = ctl.io.now ?? Date.now;
  const cluster = await readCluster(ctl.client);
  const wanted = ctl.line.args[0] === cluster.scope ? ctl.line.args.slice(1) : ctl.line.args;
  if (wanted.length === 0) throw new OperationFailed('reinit: name the members to reinitialize');
  const members = selectMembers(cluster, wanted);
  await confirm(ctl, `Are you sure you want to reinitialize members ${names(members)}? [y/N]: `, 'reinitialize');
  const progress = await Progress.start(ctl.client, (text) => ctl.io.stdout(text), {
    now,
    nodes: members.map((m) => m.name),
  });
  let failed = 0;
  try {
    for (const member of members) {
      const body = { force: ctl.line.values.force === true };
      progress.line(`POST ${memberClient(ctl, member).base}/reinitialize ${JSON.stringify(body)}`);
      const answer = await memberClient(ctl, member).send('POST', '/reinitialize', body);
      if (answer.status !== 200) {
        progress.line(`${member.name} reinitialize refused: HTTP ${answer.status}: ${bodyMessage(answer.text)}`);
        failed += report(ctl, answer.status, answer.text, '', `reinitialize for member ${member.name}`);
        continue;
      }
      const ended = await progress.waitFor(taskEnded(member.name, 'reinitialize'), REINIT_LIMIT_MS);
      const error = ((ended?.data ?? {}) as { event?: { error?: string } }).event?.error;
      const seconds = ((now() - progress.startMs) / 1000).toFixed(1);
      if (!ended)
        progress.line(
          `${member.name}: no end of the reinitialize seen within ${REINIT_LIMIT_MS / 60_000} min (see statorctl list)`,
        );
      else
        progress.line(
          error
            ? `${member.name} reinitialize failed after ${seconds}s: ${error}`
            : `${member.name} reinitialized in ${seconds}s`,
        );
      failed += report(
        ctl,
        ended && !error ? 200 : 503,
        error ?? 'not finished',
        `reinitialize for member ${member.name}`,
        `reinitialize for member ${member.name}`,
      );
    }
  } finally {
    progress.stop();
  }
  return failed > 0 ? 1 : 0;
}

/** `flush switchover` (DELETE /switchover) or `flush restart [MEMBER...]` (DELETE /restart on each member with a scheduled restart). */
export async function flush(ctl: Ctl): Promise<number> {
  const [what, ...rest] = ctl.line.args;
  if (what === 'switchover') {
    const answer = await ctl.client.send('DELETE', '/switchover');
    return report(ctl, answer.status, answer.text, bodyMessage(answer.text), 'flush scheduled switchover');
  }
  const cluster = await readCluster(ctl.client);
  const members = selectMembers(cluster, rest).filter((member) => rest.length > 0 || member.scheduled_restart);
  if (members.length === 0) {
    ctl.io.stdout('No scheduled restarts\n');
    return 0;
  }
  let failed = 0;
  for (const member of members) {
    const answer = await memberClient(ctl, member).send('DELETE', '/restart');
    failed += report(
      ctl,
      answer.status,
      answer.text,
      `flush scheduled restart for member ${member.name}`,
      `flush scheduled restart for member ${member.name}`,
    );
  }
  return failed > 0 ? 1 : 0;
}
