import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { sql } from '../helpers/sql';
import { waitFor } from '../helpers/wait-for';

/**
 * Backups instead of copies: a whole new cluster bootstrapped by a custom method (`bootstrap.method`)
 * and a replica built by a custom replica method (`create_replica_methods`), both from a
 * `pg_basebackup` archive through a script that stands in for pgBackRest or WAL-G with the same
 * interface: `--scope`, `--datadir` (and `--role`, `--connstring` for replicas), plus the section's keys.
 * Agents run from `dist/`: run `npm run build` first.
 */
jest.setTimeout(240_000);

const PG_BIN = '/usr/lib/postgresql/15/bin';

let baseDir: string;
let archive: string;
let calls: string;
let restoreScript: string;
const clusters: LocalCluster[] = [];

beforeAll(async () => {
  baseDir = tmpDir('stator-methods-');
  chmodSync(baseDir, 0o755); // PostgreSQL's OS user reaches the node directories and the archive below
  archive = join(baseDir, 'archive');
  calls = join(baseDir, 'calls', 'restore.log');
  mkdirSync(join(baseDir, 'calls'), { recursive: true });
  chmodSync(join(baseDir, 'calls'), 0o777);
  restoreScript = join(baseDir, 'restore-backup.sh');
  // The stand-in for a backup tool's restore: unpacks the archive named by --archive into --datadir.
  writeFileSync(
    restoreScript,
    [
      '#!/bin/sh',
      'set -e',
      'for arg in "$@"; do',
      '  case "$arg" in',
      '    --datadir=*) datadir="${arg#--datadir=}" ;;',
      '    --archive=*) archive="${arg#--archive=}" ;;',
      '  esac',
      'done',
      `echo "$*" >> ${calls}`,
      // A restore puts a whole directory in place, as a copy would: it fails where one is left.
      'mkdir "$datadir"',
      'tar -xf "$archive/base.tar" -C "$datadir"',
      'tar -xf "$archive/pg_wal.tar" -C "$datadir/pg_wal"',
      'chmod 700 "$datadir"',
      '',
    ].join('\n'),
  );
  chmodSync(restoreScript, 0o755);
});

afterAll(async () => {
  await Promise.all(clusters.map((cluster) => cluster.stop()));
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

async function rowsOn(node: LocalNode): Promise<number> {
  return Number((await sql<{ rows: string }>(node, 'SELECT count(*) AS rows FROM orders'))[0].rows);
}

it('bootstraps a new cluster from a backup archive by bootstrap.method, and builds its replica by a custom replica method', async () => {
  // The cluster whose backup is restored: 100 rows, then a tar-format base backup with its WAL.
  // More connections than the restored clusters' configuration (50): an archive recovery must run with the backup's.
  const source = await LocalCluster.start({
    nodes: 1,
    baseDir: join(baseDir, 'source'),
    scope: 'source',
    dcs: { postgresql: { parameters: { max_connections: 120 } } },
  });
  clusters.push(source);
  const sourceLeader = await source.waitForLeader(60_000);
  await sql(sourceLeader, 'CREATE TABLE orders AS SELECT generate_series(1, 100) AS id');
  // As a backup tool would: the replication role, over the network.
  const replication = `postgresql://replicator:replicator-secret@127.0.0.1:${sourceLeader.pgPort}/postgres`;
  execFileSync(
    join(PG_BIN, 'pg_basebackup'),
    ['-D', archive, '-F', 't', '-X', 'stream', '-c', 'fast', '-d', replication],
    { stdio: 'pipe' },
  );
  execFileSync('chmod', ['-R', 'a+rX', archive]);
  const sourceSystem = (
    await sql<{ id: string }>(sourceLeader, 'SELECT system_identifier::text AS id FROM pg_control_system()')
  )[0].id;

  const restored = await LocalCluster.start({
    nodes: 2,
    baseDir: join(baseDir, 'restored'),
    scope: 'restored',
    bootstrap: { method: 'restore', restore: { command: restoreScript, archive } },
    postgresql: () => ({
      create_replica_methods: ['restore', 'basebackup'],
      restore: { command: restoreScript, archive, no_leader: '1' },
    }),
  });
  clusters.push(restored);
  const leader = await restored.waitForHealthy(90_000);
  const replica = restored.nodes.find((node) => node !== leader)!;

  // The new cluster is the backup: same system, every row; and it takes writes that reach its replica.
  expect(
    (await sql<{ id: string }>(leader, 'SELECT system_identifier::text AS id FROM pg_control_system()'))[0].id,
  ).toBe(sourceSystem);
  expect(await rowsOn(leader)).toBe(100);
  await sql(leader, 'INSERT INTO orders VALUES (101)');
  await waitFor(async () => (await rowsOn(replica)) === 101, {
    timeoutMs: 10_000,
    description: `${replica.name} streaming the new row`,
  });

  // Both came from the script, called with the reference's arguments.
  const called = readFileSync(calls, 'utf8').trim().split('\n');
  expect(called).toContain(`--scope=restored --datadir=${leader.dataDir} --archive=${archive}`);
  // With or without a leader yet (no_leader, given as the reference's harness gives it): a connection string to it, or an empty one.
  expect(
    called.some((line) =>
      line.startsWith(
        `--archive=${archive} --no_leader=1 --scope=restored --role=replica --datadir=${replica.dataDir} --connstring=`,
      ),
    ),
  ).toBe(true);
  const events = (await (await fetch(`${replica.apiUrl}/events?type=replica.created`)).json()) as Array<{
    node: string;
    data: Record<string, unknown>;
  }>;
  expect(events.find((event) => event.node === replica.name)?.data).toMatchObject({ method: 'restore', exitCode: 0 });
});

it('runs the recovery of a custom bootstrap with recovery_conf, and leads on the timeline it ends with', async () => {
  const walRequests = join(baseDir, 'calls', 'restore_command.log');
  const pitr = await LocalCluster.start({
    nodes: 1,
    baseDir: join(baseDir, 'pitr'),
    scope: 'pitr',
    bootstrap: {
      method: 'restore',
      // The WAL archive is empty here: recovery replays what the backup holds, asks for more, and promotes.
      restore: {
        command: restoreScript,
        archive,
        recovery_conf: { restore_command: `echo %f >> ${walRequests}; false`, recovery_target_action: 'promote' },
      },
    },
  });
  clusters.push(pitr);
  const leader = await pitr.waitForLeader(90_000);
  expect(await rowsOn(leader)).toBe(100);
  expect((await leader.status())?.timeline).toBe(2);
  // A hot standby refuses to start below its primary's max_connections: the recovery ran with pg_control's value, as Patroni's.
  expect((await sql<{ max_connections: string }>(leader, 'SHOW max_connections'))[0].max_connections).toBe('120');
  expect(readFileSync(walRequests, 'utf8')).toMatch(/^0000000/m);
});
