import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';
import { isPrimaryServer, sql } from '../helpers/sql';

/**
 * `statorctl promote-cluster` and `demote-cluster` as a person runs them, in tmux, on two one-node
 * clusters with their own etcd: `dr` starts as the standby cluster of `main`; promote-cluster makes
 * it writable on its own; demote-cluster makes it main's standby cluster again (rewound onto main).
 * dr's permanent slot with `cluster_type: standby` follows: kept, dropped on promotion, kept again.
 * Last, main (archiving its WAL) is demoted with `--restore-command` alone into an archive-only standby
 * cluster, and promoted back.
 */
jest.setTimeout(120_000);

const STATORCTL = join(__dirname, '..', '..', 'bin', 'statorctl.js');
let main: LocalCluster;
let dr: LocalCluster;
let baseDir: string;
let tmux: string;
/** Where main archives its WAL (archive_mode on), and restores from once demoted into archive recovery. */
let walArchive: string;

function statorctl(args: string[]) {
  const result = spawnSync(process.execPath, [STATORCTL, ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', TZ: 'UTC' },
    timeout: 30_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

function type(text: string): void {
  execFileSync('tmux', ['send-keys', '-t', tmux, '-l', text]);
  execFileSync('tmux', ['send-keys', '-t', tmux, 'Enter']);
}

function screen(): string {
  return execFileSync('tmux', ['capture-pane', '-p', '-J', '-S', '-', '-t', tmux], { encoding: 'utf8' });
}

async function waitForText(pattern: RegExp, timeoutMs = 20_000): Promise<void> {
  await waitFor(() => pattern.test(screen()), {
    timeoutMs,
    description: `${pattern} on the tmux screen:\n${screen().trimEnd()}`,
  });
}

const drNode = (): LocalNode => dr.nodes[0];
const hasSlot = async (node: LocalNode, name: string) =>
  (await sql(node, 'SELECT 1 FROM pg_replication_slots WHERE slot_name = $1', [name]).catch(() => [])).length === 1;
const count = async (node: LocalNode, n: number) =>
  (await sql<{ n: string }>(node, 'SELECT count(*)::text AS n FROM shipped WHERE n = $1', [n]))[0].n;

beforeAll(async () => {
  baseDir = tmpDir('stator-cluster-role-');
  chmodSync(baseDir, 0o755); // PostgreSQL's OS user reaches the clusters' directories below it
  walArchive = join(baseDir, 'wal-archive');
  mkdirSync(walArchive);
  chmodSync(walArchive, 0o777);
  main = await LocalCluster.start({
    nodes: 1,
    baseDir: `${baseDir}/main`,
    scope: 'main',
    ttl: 10,
    loopWait: 2,
    retryTimeout: 4,
    dcs: {
      slots: { dr: { type: 'physical' } },
      postgresql: {
        parameters: { archive_mode: 'on', archive_command: `test ! -f ${walArchive}/%f && cp %p ${walArchive}/%f` },
      },
    },
  });
  const mainLeader = await main.waitForHealthy(60_000);
  await sql(mainLeader, 'CREATE TABLE shipped (n int PRIMARY KEY)');
  await sql(mainLeader, 'INSERT INTO shipped VALUES (1)');
  dr = await LocalCluster.start({
    nodes: 1,
    baseDir: `${baseDir}/dr`,
    scope: 'dr',
    ttl: 10,
    loopWait: 2,
    retryTimeout: 4,
    // A permanent slot for dr's own downstream (an archiver), kept only while dr is a standby cluster.
    dcs: {
      standby_cluster: { host: '127.0.0.1', port: mainLeader.pgPort, primary_slot_name: 'dr' },
      slots: { standby_archiver: { type: 'physical', cluster_type: 'standby' } },
    },
  });
  await waitFor(
    async () =>
      (await drNode().healthCode('/standby-leader')) === 200 && (await count(drNode(), 1).catch(() => '0')) === '1',
    {
      timeoutMs: 60_000,
      description: 'dr the standby leader of main, holding its row',
    },
  );
  await waitFor(() => hasSlot(drNode(), 'standby_archiver'), {
    timeoutMs: 15_000,
    description: "dr's standby leader keeping the standby-only slot",
  });
  tmux = `stator-cluster-role-${process.pid}`;
  execFileSync('tmux', ['new-session', '-d', '-s', tmux, '-x', '200', '-y', '50', 'bash --noprofile --norc']);
  execFileSync('tmux', ['set-option', '-t', tmux, 'history-limit', '5000']);
  type('export TZ=UTC PS1="$ "');
});

afterAll(async () => {
  if (tmux) spawnSync('tmux', ['kill-session', '-t', tmux]);
  await dr?.stop();
  await main?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

it('refuses what patronictl refuses, changing nothing', async () => {
  const api = drNode().apiUrl;
  const bare = statorctl(['--api', api, 'demote-cluster', '--force']);
  expect(bare).toMatchObject({
    code: 2,
    stderr: expect.stringContaining('At least --host, --port or --restore-command should be specified'),
  });
  const portAlone = statorctl(['--api', api, 'demote-cluster', '--port', '5432', '--force']);
  expect(portAlone).toMatchObject({
    code: 2,
    stderr: expect.stringContaining('--port needs --host (the remote primary) or --restore-command'),
  });
  const standbyAgain = statorctl(['--api', api, 'demote-cluster', '--host', '127.0.0.1', '--force']);
  expect(standbyAgain).toMatchObject({ code: 1, stderr: 'Error: Cluster is already in the required state\n' });
  const primaryAgain = statorctl(['--api', main.nodes[0].apiUrl, 'promote-cluster', '--force']);
  expect(primaryAgain).toMatchObject({ code: 1, stderr: 'Error: Cluster is already in the required state\n' });
  const otherCluster = statorctl(['--api', api, 'promote-cluster', 'main', '--force']);
  expect(otherCluster).toMatchObject({ code: 1, stderr: expect.stringContaining('belongs to cluster dr, not main') });
  // Answering no at the prompt: nothing sent.
  type(`node ${STATORCTL} --api ${api} promote-cluster dr; echo "exit=$?"`);
  await waitForText(/Are you sure you want to promote dr cluster\? \[y\/N\]: $/m);
  type('n');
  await waitForText(/Error: Aborted cluster promotion\nexit=1/);
  expect(await drNode().healthCode('/standby-leader')).toBe(200);
});

it('promote-cluster makes the one-node standby cluster writable on its own, after it was switched to archive recovery', async () => {
  // As Patroni's acceptance scenario: the standby cluster is switched to archive recovery (no host), then promoted.
  const switched = await fetch(`${drNode().apiUrl}/config`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      standby_cluster: { host: null, port: null, primary_slot_name: null, restore_command: 'false' },
    }),
  });
  expect(switched.status).toBe(200);
  await waitFor(async () => (await drNode().status())?.replication_state === 'in archive recovery', {
    timeoutMs: 30_000,
    description: 'dr in archive recovery',
  });
  type('clear; tmux clear-history');
  type(`node ${STATORCTL} --api ${drNode().apiUrl} promote-cluster; echo "exit=$?"`);
  await waitForText(
    /Current cluster topology\n[\s\S]*Standby Leader[\s\S]*Are you sure you want to promote dr cluster\? \[y\/N\]: $/m,
  );
  type('y');
  await waitForText(/\d\d:\d\d:\d\d cluster is successfully promoted\n[\s\S]*\| Leader[\s\S]*exit=0/, 60_000);
  expect(await isPrimaryServer(drNode())).toBe(true);
  await sql(drNode(), 'INSERT INTO shipped VALUES (2)');
  expect(await drNode().healthCode('/primary')).toBe(200);
  // cluster_type standby: not kept in a primary cluster.
  await waitFor(async () => !(await hasSlot(drNode(), 'standby_archiver')), {
    timeoutMs: 15_000,
    description: 'the standby-only slot dropped once dr is a primary cluster',
  });
});

it("demote-cluster makes it the standby cluster of main again: rewound, streaming main's rows, read-only", async () => {
  type('clear; tmux clear-history');
  const mainLeader = main.nodes[0];
  type(
    `node ${STATORCTL} --api ${drNode().apiUrl} demote-cluster --host 127.0.0.1 --port ${mainLeader.pgPort} --primary-slot-name dr; echo "exit=$?"`,
  );
  await waitForText(
    /Current cluster topology\n[\s\S]*\| Leader[\s\S]*Are you sure you want to demote dr cluster\? \[y\/N\]: $/m,
  );
  type('y');
  await waitForText(/\d\d:\d\d:\d\d cluster is successfully demoted\n[\s\S]*Standby Leader[\s\S]*exit=0/, 90_000);
  await sql(mainLeader, 'INSERT INTO shipped VALUES (3)');
  await waitFor(async () => (await count(drNode(), 3).catch(() => '0')) === '1', {
    timeoutMs: 30_000,
    description: "dr holding main's new row",
  });
  // dr's own write after its promotion is gone: it follows main's history now.
  expect(await count(drNode(), 2)).toBe('0');
  expect(await isPrimaryServer(drNode())).toBe(false);
  expect(await drNode().healthCode('/standby-leader')).toBe(200);
  await waitFor(() => hasSlot(drNode(), 'standby_archiver'), {
    timeoutMs: 15_000,
    description: 'the standby-only slot created again in the standby cluster',
  });
});

it('demote-cluster --restore-command alone turns main into an archive-only standby cluster (its shutdown checkpoint archived); promote-cluster brings it back', async () => {
  const mainLeader = main.nodes[0];
  await sql(mainLeader, 'INSERT INTO shipped VALUES (4)');
  const demoted = statorctl([
    '--api',
    mainLeader.apiUrl,
    'demote-cluster',
    '--restore-command',
    `cp ${walArchive}/%f %p`,
    '--force',
  ]);
  expect(demoted).toMatchObject({
    code: 0,
    stdout: expect.stringMatching(/cluster is successfully demoted\n[\s\S]*Standby Leader/),
  });
  expect(
    await sql<{ recovery: boolean; conninfo: string }>(
      mainLeader,
      "SELECT pg_is_in_recovery() AS recovery, current_setting('primary_conninfo') AS conninfo",
    ),
  ).toEqual([{ recovery: true, conninfo: '' }]);
  expect(await mainLeader.status()).toMatchObject({
    role: 'standby_leader',
    state: 'running',
    replication_state: 'in archive recovery',
  });
  // The WAL file of the shutdown checkpoint, where the restarted server's pg_control says its checkpoint is, reached the archive.
  const [{ redo }] = await sql<{ redo: string }>(
    mainLeader,
    'SELECT redo_wal_file AS redo FROM pg_control_checkpoint()',
  );
  expect(existsSync(join(walArchive, redo))).toBe(true);
  const events = (await (await fetch(`${mainLeader.apiUrl}/events?limit=1000`)).json()) as Array<{
    type: string;
    data: Record<string, unknown>;
  }>;
  expect(
    events
      .filter((event) => event.type.startsWith('cluster.demot') || event.type.startsWith('cluster.shutdown_checkpoint'))
      .map((event) => event.type),
  ).toEqual(expect.arrayContaining(['cluster.demoting', 'cluster.shutdown_checkpoint_archived', 'cluster.demoted']));
  expect(await count(mainLeader, 4)).toBe('1');

  const promoted = statorctl(['--api', mainLeader.apiUrl, 'promote-cluster', '--force']);
  expect(promoted).toMatchObject({ code: 0, stdout: expect.stringContaining('cluster is successfully promoted') });
  await waitFor(async () => (await mainLeader.healthCode('/primary')) === 200 && (await isPrimaryServer(mainLeader)), {
    timeoutMs: 30_000,
    description: 'main writable again',
  });
  await sql(mainLeader, 'INSERT INTO shipped VALUES (5)');
});
