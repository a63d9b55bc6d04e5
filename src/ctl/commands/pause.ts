import { bodyMessage } from '../client';
import { Progress } from '../progress';
import { memberBase, statusPath } from '../target';
import { Ctl, OperationFailed, readCluster } from '../context';

/** How long `--wait` waits for every member to report the new mode. */
const WAIT_LIMIT_MS = 60_000;
/** Then for the fact the change recorded, which may reach the event stream after the members took it up. */
const FACT_WAIT_MS = 3_000;

/**
 * `pause` / `resume`: PATCH /config `{pause: true}` / `{pause: null}`, as patronictl. With `--wait`,
 * until every member's status document reports the mode; `resume --wait` shows its progress
 * (the `cluster.resumed` fact and each member taking it up) with the elapsed time.
 */
export async function pauseOrResume(ctl: Ctl, pause: boolean): Promise<number> {
  const cluster = await readCluster(ctl.client);
  if (Boolean(cluster.pause) === pause)
    throw new OperationFailed(`Cluster is ${pause ? 'already paused' : 'not paused'}`);
  const now = ctl.io.now ?? Date.now;
  const wait = ctl.line.values.wait === true;
  const progress = wait ? await Progress.start(ctl.client, (text) => ctl.io.stdout(text), { now }) : null;
  try {
    const answer = await ctl.client.send('PATCH', '/config', { pause: pause ? true : null });
    if (answer.status !== 200)
      throw new OperationFailed(
        `${pause ? 'pause' : 'resume'} failed: HTTP ${answer.status}: ${bodyMessage(answer.text)}`,
      );
    if (progress) {
      progress.line(`'${pause ? 'pause' : 'resume'}' request sent, waiting until it is recognized by all nodes`);
      const pending = new Set(cluster.members.map((member) => member.name));
      const deadline = now() + WAIT_LIMIT_MS;
      while (pending.size > 0 && now() < deadline) {
        for (const member of cluster.members.filter((m) => pending.has(m.name) && m.api_url)) {
          const status = await ctl.client
            .forBase(memberBase(member.api_url!))
            .getJson<{ pause?: boolean }>(statusPath(member.api_url))
            .catch(() => null);
          if (status && Boolean(status.pause) === pause) {
            pending.delete(member.name);
            progress.line(`${member.name} ${pause ? 'paused' : 'resumed'}`);
          }
        }
        if (pending.size > 0) await new Promise((resolve) => setTimeout(resolve, 200));
      }
      if (pending.size > 0) {
        progress.line(`not recognized within ${WAIT_LIMIT_MS / 1000} s by ${[...pending].join(', ')}`);
        return 1;
      }
      const fact = pause ? 'cluster.paused' : 'cluster.resumed';
      await progress.waitFor((event) => event.type === fact, FACT_WAIT_MS);
    }
  } finally {
    progress?.stop();
  }
  ctl.io.stdout(`Success: cluster management is ${pause ? 'paused' : 'resumed'}\n`);
  return 0;
}
