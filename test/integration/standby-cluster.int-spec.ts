import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';
import { RecordedEvent } from '../../src/events/event';
import { isPrimaryServer, sql } from '../helpers/sql';

/**
 * Two Stator clusters, each with its own etcd, as in two data centres: `main` (2 nodes) and `dr`
 * (2 nodes), the standby cluster of `main`. dr's first member clones main's primary and streams from
 * it as the `standby_leader`; dr's other member follows the standby leader. A switchover inside dr
 * moves the standby leader; removing `standby_cluster` promotes dr, which then runs on its own.
 */
jest.setTimeout(240_000);

let main: LocalCluster;
let dr: LocalCluster;
let baseDir: string;
let mainLeader: LocalNode;
let written = 0;
/** Each call of dr's custom replica method, with its arguments. */
let calls: string;
/** Where main archives its WAL, for the archive-only standby cluster. */
let walArchive: string;
/** The restore script's path (dr's custom method, also the archive-only cluster's). */
let script: string;
const clusters: LocalCluster[] = [];
const PG_BIN = '/usr/lib/postgresql/15/bin';
const TIMING = { ttl: 10, loopWait: 2, retryTimeout: 4 };

async function patchConfig(node: LocalNode, patch: Record<string, unknown>): Promise<void> {
  const response = await fetch(`${node.apiUrl}/config`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(patch),
  });
  expect({ status: response.status, body: await response.text() }).toMatchObject({ status: 200 });
}

/** One more row on main's primary; resolves with how many there are. */
async function writeOnMain(): Promise<number> {
  await sql(mainLeader, 'INSERT INTO shipped VALUES ($1)', [++written]);
  return written;
}

async function rowsOn(node: LocalNode): Promise<number> {
  return Number((await sql<{ n: string }>(node, 'SELECT count(*)::text AS n FROM shipped'))[0].n);
}

/** dr's standby leader (200 on /standby-leader), once there is exactly one. */
async function standbyLeader(): Promise<LocalNode> {
  let found: LocalNode | null = null;
  await waitFor(
    async () => {
      const answering = [];
      for (const node of dr.nodes) if ((await node.healthCode('/standby-leader')) === 200) answering.push(node);
      found = answering.length === 1 ? answering[0] : null;
      return found !== null;
    },
    { timeoutMs: 60_000, description: "one of dr's members answering 200 on /standby-leader" },
  );
  return found!;
}

/** Both dr members hold every row main acknowledged so far. */
async function drHasEveryRow(): Promise<void> {
  const expected = await writeOnMain();
  for (const node of dr.nodes) {
    await waitFor(async () => (await rowsOn(node).catch(() => -1)) === expected, {
      timeoutMs: 20_000,
      description: `${node.name} of dr holding ${expected} rows`,
    });
  }
}

/** What the node's `patroni.dynamic.json` (Patroni's cache of /config in the data directory) says, null before it exists. */
function cachedConfig(node: LocalNode): Record<string, unknown> | null {
  const file = join(node.dataDir, 'patroni.dynamic.json');
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>) : null;
}

function etcdctl(cluster: LocalCluster, ...args: string[]): string {
  return execFileSync('etcdctl', [`--endpoints=${cluster.etcd.endpoint}`, ...args], {
    env: { ...process.env, ETCDCTL_API: '3' },
  }).toString();
}

async function eventsOf(node: LocalNode, query: Record<string, string>): Promise<RecordedEvent[]> {
  const response = await fetch(`${node.apiUrl}/events?${new URLSearchParams({ limit: '1000', ...query }).toString()}`);
  return (await response.json()) as RecordedEvent[];
}

beforeAll(async () => {
  baseDir = tmpDir('stator-standby-');
  chmodSync(baseDir, 0o755); // PostgreSQL's OS user reaches the clusters' directories below it
  // dr's standby leader is built by a custom replica method, as from a backup tool: here it copies the remote itself.
  calls = join(baseDir, 'copy-remote.log');
  writeFileSync(calls, '');
  chmodSync(calls, 0o666);
  script = join(baseDir, 'copy-remote.sh');
  writeFileSync(
    script,
    [
      '#!/bin/sh',
      'set -e',
      'for arg in "$@"; do',
      '  case "$arg" in',
      '    --datadir=*) datadir="${arg#--datadir=}" ;;',
      '    --connstring=*) connstring="${arg#--connstring=}" ;;',
      '    --source=*) source="${arg#--source=}" ;;',
      '  esac',
      'done',
      // Without a primary to name (an archive-only standby cluster), the method's own option says where the backup is.
      '[ -n "$connstring" ] || connstring="$source"',
      `echo "$*" >> ${calls}`,
      `${PG_BIN}/pg_basebackup -D "$datadir" -X stream -c fast -d "$connstring"`,
      '',
    ].join('\n'),
  );
  chmodSync(script, 0o755);
  // main keeps a permanent slot for dr, so dr never finds the WAL it needs gone, and archives its WAL for the archive-only standby.
  walArchive = join(baseDir, 'wal-archive');
  mkdirSync(walArchive);
  chmodSync(walArchive, 0o777);
  main = await LocalCluster.start({
    nodes: 2,
    baseDir: `${baseDir}/main`,
    scope: 'main',
    ...TIMING,
    dcs: {
      slots: { dr: { type: 'physical' } },
      postgresql: {
        parameters: { archive_mode: 'on', archive_command: `test ! -f ${walArchive}/%f && cp %p ${walArchive}/%f` },
      },
    },
  });
  mainLeader = await main.waitForHealthy(60_000);
  await sql(mainLeader, 'CREATE TABLE shipped (n int PRIMARY KEY)');
  await writeOnMain();
  dr = await LocalCluster.start({
    nodes: 2,
    baseDir: `${baseDir}/dr`,
    scope: 'dr',
    ...TIMING,
    dcs: {
      standby_cluster: {
        host: '127.0.0.1',
        port: mainLeader.pgPort,
        primary_slot_name: 'dr',
        create_replica_methods: ['copy_remote', 'basebackup'],
      },
      // As in Patroni's own standby_cluster feature: a standby cluster ignores it until it is promoted (a switchover still works).
      synchronous_mode: true,
    },
    postgresql: () => ({ copy_remote: { command: script } }),
  });
});

afterAll(async () => {
  await Promise.all(clusters.map((cluster) => cluster.stop()));
  await dr?.stop();
  await main?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

it("builds the standby cluster from main's primary: a standby leader streaming from it, a replica following the standby leader", async () => {
  const leader = await standbyLeader();
  const replica = dr.nodes.find((node) => node !== leader)!;
  await waitFor(async () => (await replica.healthCode('/replica')) === 200, {
    timeoutMs: 60_000,
    description: `${replica.name} of dr answering 200 on /replica`,
  });
  await drHasEveryRow();

  // As the reference: the standby leader is the leader, but no write target and not in the read pool.
  expect(await leader.healthCode('/leader')).toBe(200);
  expect(await leader.healthCode('/standby_leader')).toBe(200);
  expect(await leader.healthCode('/primary')).toBe(503);
  expect(await leader.healthCode('/replica')).toBe(503);
  expect(await replica.healthCode('/standby-leader')).toBe(503);
  const members = (
    (await (await fetch(`${leader.apiUrl}/cluster`)).json()) as { members: { name: string; role: string }[] }
  ).members;
  expect(Object.fromEntries(members.map((member) => [member.name, member.role]))).toEqual({
    [leader.name]: 'standby_leader',
    [replica.name]: 'replica',
  });
  const status = (await leader.status())!;
  expect(status.role).toBe('standby_leader');

  // It streams through the slot main keeps for it, and says where from in its log.
  await waitFor(
    async () =>
      (await sql<{ active: boolean }>(mainLeader, "SELECT active FROM pg_replication_slots WHERE slot_name = 'dr'"))[0]
        ?.active === true,
    {
      timeoutMs: 20_000,
      description: "main's slot dr in use",
    },
  );
  const roles = await eventsOf(leader, { stream: `node/${leader.name}/role` });
  expect(roles.map((event) => event.to)).toContain('standby_leader');
  expect(
    roles.some(
      (event) =>
        event.cause === 'UPSTREAM_CHANGED' &&
        (event.data?.event as { upstream?: string }).upstream === `remote 127.0.0.1:${mainLeader.pgPort}`,
    ),
  ).toBe(true);
  const cluster = await eventsOf(leader, { stream: 'cluster' });
  expect(cluster.map((event) => event.type)).toEqual(
    expect.arrayContaining(['cluster.bootstrap_started', 'replica.created']),
  );
  // The standby leader was built by standby_cluster's method, called with the reference's arguments and the remote's address.
  const [call] = readFileSync(calls, 'utf8').trim().split('\n');
  expect(call).toMatch(
    new RegExp(`^--scope=dr --role=replica --datadir=\\S+ --connstring=.*port=${mainLeader.pgPort}`),
  );
  expect(cluster.find((event) => event.type === 'replica.created')?.data).toMatchObject({
    method: 'copy_remote',
    source: `remote 127.0.0.1:${mainLeader.pgPort}`,
  });

  // Each member keeps /config in its data directory, where Patroni's tools and runbooks look for it.
  for (const node of dr.nodes) {
    await waitFor(
      async () => (cachedConfig(node)?.standby_cluster as { host?: string } | undefined)?.host === '127.0.0.1',
      { timeoutMs: 10_000, description: `${node.name}'s patroni.dynamic.json naming main` },
    );
  }
});

it("builds an archive-only standby cluster: its leader restores main's archived WAL, with no connection to main", async () => {
  // The backup restore stands in for a backup tool: with no primary to name, it gets main's address from its own option.
  const archiveOnly = await LocalCluster.start({
    nodes: 1,
    baseDir: `${baseDir}/archive-only`,
    scope: 'archive-only',
    ...TIMING,
    dcs: { standby_cluster: { restore_command: `cp ${walArchive}/%f %p`, create_replica_methods: ['restore'] } },
    postgresql: () => ({
      restore: {
        command: script,
        no_leader: true,
        source: `postgresql://replicator:replicator-secret@127.0.0.1:${mainLeader.pgPort}/postgres`,
      },
    }),
  });
  clusters.push(archiveOnly);
  const [leader] = archiveOnly.nodes;
  await waitFor(async () => (await leader.healthCode('/standby-leader')) === 200, {
    timeoutMs: 60_000,
    description: 'the archive-only standby leader',
  });
  expect(
    (await sql<{ conninfo: string }>(leader, "SELECT current_setting('primary_conninfo') AS conninfo"))[0].conninfo,
  ).toBe('');
  // A row reaches it once main archives the segment that holds it.
  const row = await writeOnMain();
  await sql(mainLeader, 'SELECT pg_switch_wal()');
  await waitFor(
    async () =>
      (
        await sql<{ n: string }>(leader, 'SELECT count(*)::text AS n FROM shipped WHERE n = $1', [row]).catch(() => [
          { n: '0' },
        ])
      )[0].n === '1',
    {
      timeoutMs: 30_000,
      description: `row ${row} restored from main's archive`,
    },
  );
  // Promoted (as Patroni's acceptance does, within 10 s): the one-node cluster takes writes on its own.
  const promotedAt = Date.now();
  await patchConfig(leader, { standby_cluster: null });
  await waitFor(async () => (await isPrimaryServer(leader)) && (await leader.healthCode('/primary')) === 200, {
    timeoutMs: 10_000,
    description: 'the archive-only standby leader promoted',
  });
  process.stdout.write(`archive-only standby cluster promoted in ${((Date.now() - promotedAt) / 1000).toFixed(1)} s\n`);
  await sql(leader, 'INSERT INTO shipped VALUES (-100)');
  await archiveOnly.stop();
});

it('moves the standby leader by a switchover inside the standby cluster, still streaming from main', async () => {
  const old = await standbyLeader();
  const candidate = dr.nodes.find((node) => node !== old)!;
  // No candidate named, as `patronictl switchover --force` asks: dr's synchronous_mode must not narrow the choice to a /sync standby.
  const response = await fetch(`${old.apiUrl}/switchover`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ leader: old.name }),
  });
  expect({ status: response.status, body: await response.text() }).toMatchObject({ status: 200 });
  await waitFor(
    async () => (await candidate.healthCode('/standby-leader')) === 200 && (await old.healthCode('/replica')) === 200,
    {
      timeoutMs: 60_000,
      description: `${candidate.name} the standby leader and ${old.name} its replica`,
    },
  );
  expect(await candidate.healthCode('/primary')).toBe(503);
  await drHasEveryRow();
});

it('fails the standby leader over inside the standby cluster when it is lost', async () => {
  const lost = await standbyLeader();
  const survivor = dr.nodes.find((node) => node !== lost)!;
  await lost.powerCut();
  await waitFor(async () => (await survivor.healthCode('/standby-leader')) === 200, {
    timeoutMs: 60_000,
    description: `${survivor.name} the standby leader after ${lost.name} was lost`,
  });
  expect(await survivor.healthCode('/primary')).toBe(503);
  lost.start();
  await waitFor(async () => (await lost.healthCode('/replica')) === 200, {
    timeoutMs: 60_000,
    description: `${lost.name} back as a replica of the standby leader`,
  });
  await drHasEveryRow();
});

it('writes /config again when the standby leader finds none in the DCS (a cluster adopted from an existing data directory)', async () => {
  await standbyLeader();
  etcdctl(dr, 'del', '/service/dr/config');
  await waitFor(
    async () => etcdctl(dr, 'get', '--print-value-only', '/service/dr/config').includes('"standby_cluster"'),
    { timeoutMs: 20_000, description: "dr's /config written again by its standby leader" },
  );
  // The API serves /config from the node's view of the DCS, which the watch brings up to date moments later.
  const config = await waitFor(
    async () => {
      const answer = await fetch(`${dr.nodes[0].apiUrl}/config`);
      return answer.status === 200 ? ((await answer.json()) as Record<string, unknown>) : null;
    },
    { timeoutMs: 10_000, description: `${dr.nodes[0].name} serving the rewritten /config` },
  );
  expect(config).toMatchObject({
    standby_cluster: { host: '127.0.0.1', port: mainLeader.pgPort },
    synchronous_mode: true,
  });
});

it('follows main to its new primary when standby_cluster names it', async () => {
  const leader = await standbyLeader();
  const other = main.nodes.find((node) => node !== mainLeader)!;
  const response = await fetch(`${mainLeader.apiUrl}/switchover`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ leader: mainLeader.name, candidate: other.name }),
  });
  expect(response.status).toBe(200);
  mainLeader = await main.waitForLeader(60_000, [mainLeader.name]);
  await main.waitForHealthy(60_000);
  await patchConfig(leader, {
    standby_cluster: { host: '127.0.0.1', port: mainLeader.pgPort, primary_slot_name: 'dr' },
  });
  await drHasEveryRow();
  const roles = await eventsOf(leader, { stream: `node/${leader.name}/role` });
  expect(
    roles.some(
      (event) =>
        event.cause === 'UPSTREAM_CHANGED' &&
        (event.data?.event as { upstream?: string }).upstream === `remote 127.0.0.1:${mainLeader.pgPort}`,
    ),
  ).toBe(true);
});

it('promotes the standby cluster when standby_cluster is removed: its leader takes writes, its replica follows', async () => {
  const leader = await standbyLeader();
  const replica = dr.nodes.find((node) => node !== leader)!;
  const before = await rowsOn(leader);
  await patchConfig(leader, { standby_cluster: null });
  // As the reference, /primary answers 200 from the moment the lock holder is no standby leader; writes follow the promotion.
  await waitFor(async () => (await leader.healthCode('/primary')) === 200 && (await isPrimaryServer(leader)), {
    timeoutMs: 30_000,
    description: `${leader.name} of dr promoted`,
  });
  await sql(leader, 'INSERT INTO shipped VALUES (-1)');
  await waitFor(async () => (await rowsOn(replica).catch(() => -1)) === before + 1, {
    timeoutMs: 30_000,
    description: `${replica.name} of dr streaming from its promoted leader`,
  });
  expect(await leader.healthCode('/standby-leader')).toBe(503);
  await waitFor(async () => cachedConfig(leader) !== null && !('standby_cluster' in cachedConfig(leader)!), {
    timeoutMs: 10_000,
    description: `${leader.name}'s patroni.dynamic.json without standby_cluster`,
  });
  // main goes on by itself, without dr's row.
  expect(await rowsOn(mainLeader)).toBe(written);
});

it("turns main into a standby cluster of the promoted dr: main's leader streams from dr (rewound if their histories forked), its replica follows", async () => {
  let promoted: LocalNode | null = null;
  await waitFor(
    async () => {
      for (const node of dr.nodes) if ((await node.healthCode('/primary')) === 200) promoted = node;
      return promoted !== null;
    },
    { timeoutMs: 30_000, description: "dr's primary" },
  );
  const oldMainLeader = mainLeader;
  const mainReplica = main.nodes.find((node) => node !== oldMainLeader)!;
  await patchConfig(oldMainLeader, { standby_cluster: { host: '127.0.0.1', port: promoted!.pgPort } });
  await waitFor(
    async () =>
      (await oldMainLeader.healthCode('/standby-leader')) === 200 && (await mainReplica.healthCode('/replica')) === 200,
    {
      timeoutMs: 90_000,
      description: `${oldMainLeader.name} of main the standby leader of dr, ${mainReplica.name} its replica`,
    },
  );
  expect(await oldMainLeader.healthCode('/primary')).toBe(503);
  // dr's writes now reach both of main's members.
  await sql(promoted!, 'INSERT INTO shipped VALUES (-2)');
  for (const node of main.nodes) {
    await waitFor(
      async () =>
        (
          await sql<{ n: string }>(node, 'SELECT count(*)::text AS n FROM shipped WHERE n = -2').catch(() => [
            { n: '0' },
          ])
        )[0].n === '1',
      {
        timeoutMs: 30_000,
        description: `${node.name} of main holding dr's row`,
      },
    );
  }
});
