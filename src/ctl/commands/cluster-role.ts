import { strftime } from '../../common/log-format';
import { standbyClusterProblems } from '../../config/standby-cluster-config';
import { UsageError } from '../args';
import { bodyMessage } from '../client';
import { ClusterDocument, ClusterMember, Ctl, OperationFailed, readCluster } from '../context';
import { isYes } from '../prompt';
import { memberBase, statusPath } from '../target';
import { renderCluster } from './list';

/** How long statorctl waits for the cluster to reach the new role (patronictl waits without end). */
export const ROLE_CHANGE_LIMIT_MS = 180_000;
const POLL_MS = 1000;

type Change = 'demote' | 'promote';

/**
 * `demote-cluster [--host H] [--port P] [--restore-command C] [--primary-slot-name S] [--force]`, as
 * patronictl 4.1: the cluster becomes a standby cluster (PATCH /config `{standby_cluster: {...}}`); its
 * leader turns standby leader, streaming from the remote primary at `--host`, or, with `--restore-command`
 * alone, restoring WAL from the archive (the leader's demote-cluster archives its shutdown checkpoint first).
 */
export async function demoteCluster(ctl: Ctl): Promise<number> {
  const values = ctl.line.values;
  const host = values.host || undefined;
  const restoreCommand = values['restore-command'] || undefined;
  const port = portOf(values.port);
  if (!host && port === undefined && !restoreCommand)
    throw new UsageError('At least --host, --port or --restore-command should be specified');
  // patronictl would send a port alone; the leader would have no remote to follow, so it is said before anything is sent.
  if (!host && !restoreCommand)
    throw new UsageError(
      '--port needs --host (the remote primary) or --restore-command (an archive-only standby cluster): a port alone names nothing to follow',
    );
  const standby: Record<string, unknown> = {};
  if (host) standby.host = host;
  if (port !== undefined) standby.port = port;
  if (values['primary-slot-name']) standby.primary_slot_name = values['primary-slot-name'];
  if (restoreCommand) standby.restore_command = restoreCommand;
  // The node refuses the same; said here before any prompt.
  const problems = standbyClusterProblems(standby);
  if (problems.length > 0) throw new UsageError(problems.join('; '));
  return changeClusterRole(ctl, 'demote', standby);
}

/** `promote-cluster [--force]`, as patronictl 4.1: PATCH /config `{standby_cluster: null}`; the standby leader is promoted. */
export async function promoteCluster(ctl: Ctl): Promise<number> {
  return changeClusterRole(ctl, 'promote', null);
}

async function changeClusterRole(ctl: Ctl, change: Change, standby: Record<string, unknown> | null): Promise<number> {
  const now = ctl.io.now ?? Date.now;
  const cluster = await readCluster(ctl.client);
  checkClusterName(ctl, cluster);
  const targetRole = change === 'demote' ? 'standby_leader' : 'leader';
  const leader = leaderMember(cluster);
  if (!leader) throw new OperationFailed(`Cluster has no leader, ${stem(change)}ion is not possible`);
  if (leader.role === targetRole) throw new OperationFailed('Cluster is already in the required state');

  ctl.io.stdout(`Current cluster topology\n${renderCluster(ctl, cluster, false)}`);
  if (ctl.line.values.force !== true) {
    const answer = await ctl.io.prompter.ask(`Are you sure you want to ${change} ${cluster.scope} cluster? [y/N]: `);
    if (!isYes(answer)) throw new OperationFailed(`Aborted cluster ${stem(change)}ion`);
  }

  const answer = await ctl.client.send('PATCH', '/config', { standby_cluster: standby });
  if (answer.status !== 200) {
    throw new OperationFailed(
      `Failed to ${change} ${cluster.scope} cluster: /config PATCH status code=${answer.status}, (${bodyMessage(answer.text)})`,
    );
  }

  const stamp = () => strftime('%Y-%m-%d %H:%M:%S', new Date(now()));
  const deadline = now() + ROLE_CHANGE_LIMIT_MS;
  let latest = cluster;
  for (;;) {
    latest = await readCluster(ctl.client).catch(() => latest);
    const state = roleChangeState(latest, leader.name, targetRole);
    // /cluster names the role the configuration gives; the leader's own status says what its server is.
    const serverRole = state.done ? await leaderServerRole(ctl, latest) : undefined;
    if (state.done && serverRole === (targetRole === 'leader' ? 'primary' : 'standby_leader')) {
      ctl.io.stdout(`${stamp()} cluster is successfully ${change}d\n`);
      ctl.io.stdout(renderCluster(ctl, latest, false));
      return 0;
    }
    ctl.io.stdout(
      `${stamp()} ${state.done ? `cluster is unlocked: False, leader role: ${serverRole ?? 'None'}, leader state: running` : state.progress}\n`,
    );
    if (now() >= deadline) {
      ctl.io.stdout(renderCluster(ctl, latest, false));
      throw new OperationFailed(
        `the cluster did not reach the ${targetRole} role within ${ROLE_CHANGE_LIMIT_MS / 1000} s; the change stays requested (see statorctl list and events)`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** The role the leader's status document reports for its server (`primary` once it left recovery), or undefined. */
async function leaderServerRole(ctl: Ctl, cluster: ClusterDocument): Promise<string | undefined> {
  const leader = leaderMember(cluster);
  if (!leader?.api_url) return undefined;
  const status = await ctl.client
    .forBase(memberBase(leader.api_url))
    .getJson<{ role?: string }>(statusPath(leader.api_url))
    .catch(() => null);
  return status?.role;
}

/** `demot` / `promot`: patronictl's messages say demotion, promotion. */
function stem(change: Change): string {
  return change.slice(0, -1);
}

/** The leader, or the standby leader, of the cluster. */
function leaderMember(cluster: ClusterDocument): ClusterMember | undefined {
  return cluster.members.find((member) => member.role === 'leader' || member.role === 'standby_leader');
}

/**
 * Whether the role change is over, as patronictl judges it: a leader with the target role, running
 * (a standby leader also streaming); after a demotion, the previous leader running again as well.
 */
export function roleChangeState(
  cluster: ClusterDocument,
  previousLeader: string,
  targetRole: 'leader' | 'standby_leader',
): { done: boolean; progress: string } {
  const leader = leaderMember(cluster);
  const running = (member: ClusterMember | undefined) =>
    member !== undefined && ['running', 'streaming', 'in archive recovery'].includes(member.state);
  const old = cluster.members.find((member) => member.name === previousLeader);
  const done =
    leader !== undefined && leader.role === targetRole && running(leader) && (targetRole === 'leader' || running(old));
  const parts = [
    `cluster is unlocked: ${leader === undefined ? 'True' : 'False'}`,
    `leader role: ${leader === undefined ? 'None' : leader.role === 'leader' ? 'primary' : leader.role}`,
    `leader state: ${leader?.state ?? 'None'}`,
  ];
  if (targetRole === 'standby_leader' && leader && leader.name !== previousLeader && old)
    parts.push(`previous leader state: '${old.state}'`);
  return { done, progress: parts.join(', ') };
}

/** patronictl takes the cluster's name as its argument; another name is a mistake, not another cluster. */
function checkClusterName(ctl: Ctl, cluster: ClusterDocument): void {
  const [name, extra] = ctl.line.args;
  if (extra !== undefined) throw new UsageError(`${ctl.line.command}: unexpected argument '${extra}'`);
  if (name !== undefined && name !== cluster.scope)
    throw new OperationFailed(`the node at ${ctl.client.base} belongs to cluster ${cluster.scope}, not ${name}`);
}

function portOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const port = Number(value);
  if (!/^\d{1,5}$/.test(value) || port < 1 || port > 65535)
    throw new UsageError(`--port: an integer from 1 to 65535, got '${value}'`);
  return port;
}
