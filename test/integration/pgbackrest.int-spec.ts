import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { EtcdHandle, startEtcd } from '../../scripts/lib/etcd';
import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { freePort } from '../../scripts/lib/ports';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { PG_OS_USER } from '../helpers/postgres';
import { isPrimaryServer, sql } from '../helpers/sql';
import { waitFor } from '../helpers/wait-for';

/**
 * pgBackRest (Debian's) beside Stator, with the example files of deploy/examples/pgbackrest that
 * docs/integrations.md shows: WAL archived by `archive-push`; replicas built by
 * `create_replica_methods: [pgbackrest, basebackup]`; a new cluster bootstrapped from a backup
 * (`bootstrap.method: pgbackrest`); a standby cluster replaying the archive (`standby_cluster.restore_command`).
 * One repository in a temp dir, one etcd for the three clusters. The examples' production paths are
 * replaced by each node's own (see `forNode`). Agents run from `dist/`: run `npm run build` first.
 */
jest.setTimeout(180_000);

const EXAMPLES = join(__dirname, '..', '..', 'deploy', 'examples', 'pgbackrest');
const DOCS = join(__dirname, '..', '..', 'docs', 'integrations.md');
const STANZA = 'main';
const run = promisify(execFile);

let baseDir: string;
let repo: string;
let etcd: EtcdHandle;
const clusters: LocalCluster[] = [];

interface Fragment {
  bootstrap?: { dcs?: Record<string, unknown> } & Record<string, unknown>;
  postgresql?: Record<string, unknown>;
}

beforeAll(async () => {
  baseDir = tmpDir('stator-pgbackrest-');
  chmodSync(baseDir, 0o755); // PostgreSQL's OS user reaches the node directories and the repository
  repo = join(baseDir, 'repository');
  mkdirSync(repo);
  ownedByPostgres(repo);
  etcd = await startEtcd();
});

afterAll(async () => {
  await Promise.all(clusters.map((cluster) => cluster.stop()));
  await etcd?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

function ownedByPostgres(path: string): void {
  if (process.getuid?.() !== 0) return;
  const id = (flag: string) => Number(execFileSync('id', [flag, PG_OS_USER]).toString().trim());
  chownSync(path, id('-u'), id('-g'));
}

function example(name: string): string {
  return readFileSync(join(EXAMPLES, name), 'utf8');
}

/** An example with the production paths of one node replaced: its data directory, port, socket, and its own pgbackrest.conf. */
function forNode(text: string, dir: string, pgPort: number): string {
  return text
    .replaceAll('/usr/bin/pgbackrest ', `/usr/bin/pgbackrest --config=${join(dir, 'pgbackrest.conf')} `)
    .replaceAll('/var/lib/pgbackrest', repo)
    .replaceAll('/var/log/pgbackrest', join(dir, 'pgbackrest-log'))
    .replaceAll('/tmp/pgbackrest', join(dir, 'pgbackrest-lock'))
    .replaceAll('/var/lib/postgresql/15/main', join(dir, 'data'))
    .replaceAll('pg1-port=5432', `pg1-port=${pgPort}`)
    .replaceAll('/var/run/postgresql', dir); // LocalCluster's unix_socket_directories
}

/**
 * A cluster of `nodes` members configured by the example `file`: each node's directory holds its
 * pgbackrest.conf before its agent starts (ports chosen first, as the file names the port).
 */
async function startCluster(scope: string, nodes: number, file: string): Promise<LocalCluster> {
  const clusterDir = join(baseDir, scope);
  const nodePorts: { api: number; pg: number }[] = [];
  const fragments: Fragment[] = [];
  for (let index = 1; index <= nodes; index++) {
    const ports = { api: await freePort(), pg: await freePort() };
    nodePorts.push(ports);
    const dir = join(clusterDir, `node${index}`);
    mkdirSync(dir, { recursive: true });
    for (const sub of ['pgbackrest-log', 'pgbackrest-lock']) {
      mkdirSync(join(dir, sub));
      ownedByPostgres(join(dir, sub));
    }
    writeFileSync(join(dir, 'pgbackrest.conf'), forNode(example('pgbackrest.conf'), dir, ports.pg), { mode: 0o644 });
    fragments.push(parse(forNode(example(file), dir, ports.pg)) as Fragment);
  }
  // bootstrap.dcs (first node's) is the cluster's. Its archive_command names the first node's pgbackrest.conf: each node
  // has its own here (one file, /etc/pgbackrest/pgbackrest.conf, on a real host), so each node's goes to its local parameters.
  const { dcs, ...bootstrap } = fragments[0].bootstrap ?? {};
  const archiveCommand = (fragment: Fragment) =>
    (fragment.bootstrap?.dcs as { postgresql?: { parameters?: { archive_command?: string } } } | undefined)?.postgresql
      ?.parameters?.archive_command;
  const localSection = (index: number) => {
    const fragment = fragments[index - 1];
    const command = archiveCommand(fragment);
    // LocalCluster's own local parameter kept: the socket directory pgbackrest.conf names.
    return {
      ...fragment.postgresql,
      ...(command
        ? { parameters: { unix_socket_directories: join(clusterDir, `node${index}`), archive_command: command } }
        : {}),
    };
  };
  const cluster = await LocalCluster.start({
    nodes,
    baseDir: clusterDir,
    scope,
    nodePorts,
    sharedEtcd: etcd,
    dcs,
    bootstrap,
    postgresql: localSection,
  });
  clusters.push(cluster);
  return cluster;
}

/** pgBackRest run as PostgreSQL's OS user, as a backup job would, with a node's pgbackrest.conf. */
async function pgbackrest(node: LocalNode, ...args: string[]): Promise<string> {
  const ids =
    process.getuid?.() === 0
      ? {
          uid: Number((await run('id', ['-u', PG_OS_USER])).stdout),
          gid: Number((await run('id', ['-g', PG_OS_USER])).stdout),
        }
      : {};
  const { stdout } = await run(
    '/usr/bin/pgbackrest',
    [`--config=${join(node.dir, 'pgbackrest.conf')}`, `--stanza=${STANZA}`, ...args],
    { ...ids, timeout: 60_000 },
  );
  return stdout;
}

type StatorEvent = { node: string; type: string; data: Record<string, unknown> };

async function eventsOf(node: LocalNode, type: string): Promise<StatorEvent[]> {
  return ((await (await fetch(`${node.apiUrl}/events?type=${type}`)).json()) as StatorEvent[]).filter(
    (event) => event.node === node.name,
  );
}

async function reinitialize(node: LocalNode): Promise<void> {
  const answer = await fetch(`${node.apiUrl}/reinitialize`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  });
  expect(answer.status).toBe(200);
}

async function rowsOn(node: LocalNode): Promise<number> {
  return Number((await sql<{ rows: string }>(node, 'SELECT count(*) AS rows FROM orders'))[0].rows);
}

async function show(node: LocalNode, parameter: string): Promise<string> {
  return (await sql<Record<string, string>>(node, `SHOW ${parameter}`))[0][parameter];
}

it('the example in docs/integrations.md is the one this test runs', () => {
  const docs = readFileSync(DOCS, 'utf8');
  for (const file of ['pgbackrest.conf', 'stator.yml', 'stator-restore.yml', 'stator-standby.yml'])
    expect(docs).toContain(example(file));
});

it('archives WAL by archive-push, builds replicas from a backup, bootstraps a new cluster from it and feeds a standby cluster from the archive', async () => {
  // The cluster: no stanza, no backup yet, so its replica falls back to pg_basebackup.
  const main = await startCluster('main', 2, 'stator.yml');
  const leader = await main.waitForHealthy(60_000);
  const replica = main.nodes.find((node) => node !== leader)!;
  expect(await show(leader, 'archive_command')).toBe(
    `/usr/bin/pgbackrest --config=${join(leader.dir, 'pgbackrest.conf')} --stanza=main archive-push %p`,
  );
  expect((await eventsOf(replica, 'replica.method_failed')).map((event) => event.data.method)).toContain('pgbackrest');
  expect((await eventsOf(replica, 'replica.created')).map((event) => event.data.method)).toEqual(['basebackup']);

  // Reinitialized while there is still no backup: the restore fails on the kept data directory, which goes before pg_basebackup.
  await sql(leader, 'CREATE TABLE orders AS SELECT generate_series(1, 100) AS id');
  await reinitialize(replica);
  await waitFor(async () => (await eventsOf(replica, 'replica.created')).length === 2, {
    timeoutMs: 60_000,
    description: `${replica.name} rebuilt`,
  });
  expect((await eventsOf(replica, 'replica.created')).map((event) => event.data.method)).toEqual([
    'basebackup',
    'basebackup',
  ]);
  expect((await eventsOf(replica, 'replica.method_failed')).map((event) => event.data.method)).toEqual([
    'pgbackrest',
    'pgbackrest',
  ]);
  await main.waitForStreaming([replica.name], 30_000);

  // A stanza and a full backup holding 100 rows, from the leader.
  await pgbackrest(leader, 'stanza-create');
  await pgbackrest(leader, 'backup', '--type=full');
  const info = JSON.parse(await pgbackrest(leader, 'info', '--output=json')) as Array<{
    backup: unknown[];
    archive: Array<{ max: string | null }>;
  }>;
  expect(info[0].backup).toHaveLength(1);
  expect(info[0].archive[0].max).toMatch(/^0000000100000000/);
  const systemId = (
    await sql<{ id: string }>(leader, 'SELECT system_identifier::text AS id FROM pg_control_system()')
  )[0].id;

  // All at once: the replica built again, now by pgBackRest; a new cluster from the backup; a standby cluster on the archive.
  const reinitialized = (async () => {
    await reinitialize(replica);
    await waitFor(
      async () => (await eventsOf(replica, 'replica.created')).some((event) => event.data.method === 'pgbackrest'),
      {
        timeoutMs: 60_000,
        description: `${replica.name} rebuilt by pgbackrest`,
      },
    );
    await main.waitForStreaming([replica.name], 30_000);
  })();
  const starts = [startCluster('restored', 1, 'stator-restore.yml'), startCluster('standby', 1, 'stator-standby.yml')];
  // Every start settled before a failure ends the test, so that afterAll stops every cluster started.
  const settled = await Promise.allSettled([reinitialized, ...starts]);
  for (const outcome of settled) if (outcome.status === 'rejected') throw outcome.reason;
  const [restored, standby] = await Promise.all(starts);

  // A delta restore: the reinitialized member kept its data directory for it (keep_data), as with Patroni.
  const restoreLog = readFileSync(join(replica.dir, 'pgbackrest-log', `${STANZA}-restore.log`), 'utf8');
  expect(restoreLog).toContain(`remove invalid files/links/paths from '${replica.dataDir}'`);

  // The replica: restored, then streaming; pgBackRest's restore_command in postgresql.auto.conf removed, the example's in force.
  await sql(leader, 'INSERT INTO orders VALUES (101)');
  await waitFor(async () => (await rowsOn(replica).catch(() => -1)) === 101, {
    timeoutMs: 15_000,
    description: `${replica.name} streaming row 101`,
  });
  expect(readFileSync(join(replica.dataDir, 'postgresql.auto.conf'), 'utf8')).not.toMatch(/^restore_command/m);
  expect(await show(replica, 'restore_command')).toBe(
    `/usr/bin/pgbackrest --config=${join(replica.dir, 'pgbackrest.conf')} --stanza=main archive-get %f "%p"`,
  );

  // The new cluster: the backup's system, every row archived, its own timeline, and both bootstrap events name pgbackrest.
  const restoredLeader = await restored.waitForLeader(90_000);
  expect(
    (await sql<{ id: string }>(restoredLeader, 'SELECT system_identifier::text AS id FROM pg_control_system()'))[0].id,
  ).toBe(systemId);
  expect(await rowsOn(restoredLeader)).toBeGreaterThanOrEqual(100);
  expect((await restoredLeader.status())?.timeline).toBe(2);
  expect(await isPrimaryServer(restoredLeader)).toBe(true);
  for (const type of ['cluster.bootstrap_started', 'cluster.initialized']) {
    expect((await eventsOf(restoredLeader, type)).map((event) => event.data.method)).toEqual(['pgbackrest']);
  }

  // The standby cluster: built by pgBackRest without any leader, then each WAL file the primary archives is replayed.
  const standbyLeader = standby.nodes[0];
  await waitFor(async () => (await standbyLeader.healthCode('/standby-leader')) === 200, {
    timeoutMs: 60_000,
    description: 'the standby leader',
  });
  expect((await eventsOf(standbyLeader, 'replica.created')).map((event) => event.data.method)).toEqual(['pgbackrest']);
  expect(await show(standbyLeader, 'primary_conninfo')).toBe('');
  await sql(leader, 'INSERT INTO orders VALUES (102)');
  await sql(leader, 'SELECT pg_switch_wal()');
  await waitFor(async () => (await rowsOn(standbyLeader).catch(() => -1)) === 102, {
    timeoutMs: 30_000,
    description: 'row 102 replayed from the archive by the standby cluster',
  });
  expect(existsSync(join(standbyLeader.dataDir, 'standby.signal'))).toBe(true);
});
