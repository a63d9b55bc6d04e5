import { intervalOf } from '../args';
import { cell, lagInMb, renderData, renderTable, Table } from '../format';
import { ClusterDocument, ClusterMember, Ctl, readCluster, timestamp } from '../context';

const ROLE_NAMES: Record<string, string> = {
  leader: 'Leader',
  replica: 'Replica',
  standby_leader: 'Standby Leader',
  sync_standby: 'Sync Standby',
  quorum_standby: 'Quorum Standby',
};

/** patronictl's row of a member (`-f json` keys as patronictl writes them). */
export function memberRow(cluster: ClusterDocument, member: ClusterMember, depth = 0): Record<string, unknown> {
  const row: Record<string, unknown> = {
    Cluster: cluster.scope,
    ...(siteColumnShown(cluster) ? { Site: member.site ?? '' } : {}),
    Member: member.name,
    Host: member.host === undefined ? '' : member.port === undefined ? member.host : `${member.host}:${member.port}`,
    Role: ROLE_NAMES[member.role] ?? member.role,
    State: member.state,
    TL: member.timeline ?? null,
    'Lag in MB': member.role === 'leader' || member.role === 'standby_leader' ? null : lagInMb(member.lag),
    'Pending restart': member.pending_restart ? '*' : '',
    Tags: member.tags && Object.keys(member.tags).length > 0 ? member.tags : null,
  };
  if (depth > 0) row.Member = `${'+ '.repeat(depth)}${member.name}`;
  return row;
}

const COLUMNS = ['Member', 'Host', 'Role', 'State', 'TL', 'Lag in MB', 'Pending restart', 'Tags'];

/** The sites of the members (none counts as one), as Patroni's branch: a Site column when they differ, else the title says it. */
function sitesOf(cluster: ClusterDocument): Set<string | undefined> {
  return new Set(cluster.members.map((member) => member.site || undefined));
}

function siteColumnShown(cluster: ClusterDocument): boolean {
  return sitesOf(cluster).size > 1;
}

/** The members as a table with patronictl's title line and the maintenance / schedule notes under it. */
export function clusterTable(cluster: ClusterDocument, rows: Record<string, unknown>[]): string {
  const sites = [...sitesOf(cluster)];
  const columns = siteColumnShown(cluster) ? ['Site', ...COLUMNS] : COLUMNS;
  const table: Table = {
    title: `${sites.length === 1 && sites[0] ? `Site: ${sites[0]}, ` : ''}Cluster: ${cluster.scope}`,
    columns,
    rows: rows.map((row) => columns.map((column) => (column === 'Tags' ? tagsCell(row.Tags) : cell(row[column])))),
    right: ['TL', 'Lag in MB'],
  };
  let text = renderTable(table);
  if (cluster.pause) text += ' Maintenance mode: on\n';
  if (cluster.scheduled_switchover) {
    const { at, from, to } = cluster.scheduled_switchover;
    text += ` Switchover scheduled at: ${at}\n${from ? `                    from: ${from}\n` : ''}${to ? `                      to: ${to}\n` : ''}`;
  }
  for (const member of cluster.members) {
    if (member.scheduled_restart) text += ` Restart of ${member.name} scheduled: ${cell(member.scheduled_restart)}\n`;
  }
  return text;
}

function tagsCell(tags: unknown): string {
  return tags ? cell(tags) : '';
}

/** The members in replication order: the leader, then those following each member (tag replicatefrom), depth first. */
export function topologyOrder(cluster: ClusterDocument): Array<{ member: ClusterMember; depth: number }> {
  const leader = cluster.members.find((m) => m.role === 'leader' || m.role === 'standby_leader');
  const upstreamOf = (member: ClusterMember): string | undefined => {
    if (member === leader) return undefined;
    const from = member.tags?.replicatefrom;
    return typeof from === 'string' && cluster.members.some((m) => m.name === from && m !== member)
      ? from
      : leader?.name;
  };
  const ordered: Array<{ member: ClusterMember; depth: number }> = [];
  const visit = (name: string | undefined, depth: number) => {
    for (const member of cluster.members.filter(
      (m) => upstreamOf(m) === name && !ordered.some((o) => o.member === m),
    )) {
      ordered.push({ member, depth });
      visit(member.name, depth + 1);
    }
  };
  visit(undefined, 0);
  // Members in a cycle of replicatefrom tags, or with no leader at all: listed flat.
  for (const member of cluster.members)
    if (!ordered.some((o) => o.member === member)) ordered.push({ member, depth: 0 });
  return ordered;
}

/** The output of `list` (topology: indented tree) in the chosen format; `site`: only that site's members. */
export function renderCluster(ctl: Ctl, cluster: ClusterDocument, topology: boolean, site?: string): string {
  const entries = topology
    ? topologyOrder(cluster)
    : [...cluster.members].sort((a, b) => a.name.localeCompare(b.name)).map((member) => ({ member, depth: 0 }));
  // The columns and the title still follow the whole cluster, as Patroni's branch.
  const shown = site === undefined ? entries : entries.filter(({ member }) => member.site === site);
  const rows = shown.map(({ member, depth }) => memberRow(cluster, member, depth));
  return ctl.line.format === 'table' ? clusterTable(cluster, rows) : renderData(rows, ctl.line.format);
}

/** `list` and `topology`, once or every interval with --watch until interrupted. */
export async function list(ctl: Ctl, topology: boolean): Promise<number> {
  const interval = intervalOf(ctl.line.values.interval);
  if (!ctl.line.values.watch) {
    ctl.io.stdout(renderCluster(ctl, await readCluster(ctl.client), topology, ctl.line.values.site));
    return 0;
  }
  const now = ctl.io.now ?? Date.now;
  let stop = false;
  void ctl.io.interrupted?.then(() => (stop = true));
  while (!stop) {
    let text: string;
    try {
      text = renderCluster(ctl, await readCluster(ctl.client), topology, ctl.line.values.site);
    } catch (error) {
      text = `${(error as Error).message}\n`;
    }
    if (ctl.io.isTty && ctl.line.format === 'table') ctl.io.stdout('\x1b[H\x1b[2J');
    ctl.io.stdout(`${timestamp(now())}\n${text}`);
    await Promise.race([new Promise((resolve) => setTimeout(resolve, interval)), ctl.io.interrupted]);
  }
  return 0;
}

/** `history`: the timeline switches, as patronictl shows them. */
export async function history(ctl: Ctl): Promise<number> {
  const entries = await ctl.client.getJson<unknown[][]>('/history');
  const columns = ['TL', 'LSN', 'Reason', 'Timestamp', 'New Leader'];
  const rows = entries.map((entry) =>
    Object.fromEntries(columns.map((column, index) => [column, entry[index] ?? null])),
  );
  if (ctl.line.format !== 'table') ctl.io.stdout(renderData(rows, ctl.line.format));
  else
    ctl.io.stdout(
      renderTable({
        columns,
        rows: rows.map((row) => columns.map((column) => cell(row[column]))),
        right: ['TL', 'LSN'],
      }),
    );
  return 0;
}

/** `show-config`: the dynamic configuration, YAML by default (as patronictl). */
export async function showConfig(ctl: Ctl): Promise<number> {
  const config = await ctl.client.getJson<Record<string, unknown>>('/config');
  ctl.io.stdout(renderData(config, ctl.line.format === 'json' ? 'json' : 'yaml'));
  return 0;
}
