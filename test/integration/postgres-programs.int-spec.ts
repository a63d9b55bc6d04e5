import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { PG_BIN_DIR } from '../helpers/postgres';
import { waitFor } from '../helpers/wait-for';

/**
 * How PostgreSQL's programs are run: `postgresql.bin_name` maps every program to a wrapper that logs its
 * call and execs the real binary (the cluster bootstraps, clones and restarts through them);
 * `pg_ctl_timeout` bounds a start that hangs (the `postgres` wrapper sleeps while a flag file exists);
 * `proxy_address` is published as `proxy_url`; `max_timelines_history` trims the etcd `/history` key.
 * Agents run from `dist/`: run `npm run build` first.
 */
jest.setTimeout(180_000);

const PROGRAMS = ['pg_ctl', 'initdb', 'pg_controldata', 'pg_basebackup', 'postgres', 'pg_isready', 'pg_rewind'];

let baseDir: string;
let wrappers: string;
let callLog: string;
let hangFlag: string;
let rewindFails: string;
let cluster: LocalCluster;

beforeAll(async () => {
  baseDir = tmpDir('stator-programs-');
  chmodSync(baseDir, 0o755);
  wrappers = join(baseDir, 'wrappers');
  mkdirSync(wrappers);
  chmodSync(wrappers, 0o777);
  callLog = join(wrappers, 'calls.log');
  writeFileSync(callLog, '');
  chmodSync(callLog, 0o666);
  hangFlag = join(wrappers, 'hang');
  rewindFails = join(wrappers, 'rewind-fails');
  for (const program of PROGRAMS) {
    const hang = program === 'postgres' ? [`[ -e ${hangFlag} ] && [ "$1" = "-D" ] && sleep 12`] : [];
    if (program === 'pg_rewind')
      hang.push(`[ -e ${rewindFails} ] && echo "pg_rewind: fatal: made to fail" >&2 && exit 1`);
    writeFileSync(
      join(wrappers, `${program}.wrapper`),
      ['#!/bin/sh', `echo "${program} $*" >> ${callLog}`, ...hang, `exec ${join(PG_BIN_DIR, program)} "$@"`, ''].join(
        '\n',
      ),
    );
    chmodSync(join(wrappers, `${program}.wrapper`), 0o755);
  }
  cluster = await LocalCluster.start({
    nodes: 2,
    baseDir: join(baseDir, 'cluster'),
    scope: 'programs',
    dcs: { max_timelines_history: 1 },
    postgresql: (index) => ({
      bin_name: Object.fromEntries(PROGRAMS.map((program) => [program, join(wrappers, `${program}.wrapper`)])),
      pg_ctl_timeout: 6,
      ...(index === 1 ? { proxy_address: '127.0.0.1:6432' } : {}),
    }),
  });
});

afterAll(async () => {
  if (hangFlag) rmSync(hangFlag, { force: true });
  if (rewindFails) rmSync(rewindFails, { force: true });
  await cluster?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

function etcdGet(key: string): string {
  return execFileSync('etcdctl', [`--endpoints=${cluster.etcd.endpoint}`, 'get', '--print-value-only', key], {
    env: { ...process.env, ETCDCTL_API: '3' },
  })
    .toString()
    .trim();
}

function calls(): string[] {
  return readFileSync(callLog, 'utf8').trim().split('\n');
}

async function post(
  node: LocalNode,
  path: string,
  body: unknown,
  method = 'POST',
): Promise<{ status: number; text: string }> {
  const response = await fetch(`${node.apiUrl}${path}`, {
    method,
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
  return { status: response.status, text: await response.text() };
}

it('bootstraps, clones and starts through the bin_name wrappers, and publishes proxy_url', async () => {
  const leader = await cluster.waitForHealthy(90_000);
  const replica = cluster.nodes.find((node) => node !== leader)!;
  const called = calls();
  expect(called.some((line) => line.startsWith('initdb '))).toBe(true);
  expect(called.some((line) => line.startsWith('pg_basebackup '))).toBe(true);
  // The fence starts each postmaster through the wrapper too.
  expect(called.filter((line) => line.startsWith(`postgres -D ${leader.dataDir}`)).length).toBeGreaterThanOrEqual(1);
  expect(called.filter((line) => line.startsWith(`postgres -D ${replica.dataDir}`)).length).toBeGreaterThanOrEqual(1);

  const node1 = cluster.nodes[0];
  const member1 = JSON.parse(etcdGet(`/service/programs/members/${node1.name}`)) as Record<string, unknown>;
  expect(member1.proxy_url).toBe('postgres://127.0.0.1:6432/postgres');
  const member2 = JSON.parse(etcdGet(`/service/programs/members/${cluster.nodes[1].name}`)) as Record<string, unknown>;
  expect(member2).not.toHaveProperty('proxy_url');
  // patronictl reads the member keys as ever: each node listed at its own address, not the proxy's.
  const ctlConfig = join(baseDir, 'patronictl.yml');
  writeFileSync(ctlConfig, `scope: programs\nnamespace: /service\netcd3:\n  hosts: ${cluster.etcd.endpoint}\n`);
  const table = execFileSync('patronictl', ['-c', ctlConfig, 'list'], { encoding: 'utf8', timeout: 30_000 });
  const rows = table
    .split('\n')
    .map((line) => line.split('|').map((cell) => cell.trim()))
    .filter((cells) => cells.length > 3 && /^node\d$/.test(cells[1]));
  expect(rows.map((cells) => [cells[1], cells[2]])).toEqual(
    cluster.nodes.map((node) => [node.name, `127.0.0.1:${node.pgPort}`]),
  );
});

it('gives up a start that hangs after pg_ctl_timeout, and the server comes back once it goes on', async () => {
  const leader = await cluster.waitForHealthy(60_000);
  const replica = cluster.nodes.find((node) => node !== leader)!;
  writeFileSync(hangFlag, '');
  const started = Date.now();
  const answer = await post(replica, '/restart', {});
  const tookMs = Date.now() - started;
  rmSync(hangFlag, { force: true });
  expect(answer).toEqual({ status: 503, text: 'restart failed' });
  // pg_ctl_timeout is 6 s, the hang 12 s: the restart ends with the first (plus the fast stop before it).
  expect(tookMs).toBeGreaterThanOrEqual(6000);
  expect(tookMs).toBeLessThan(20_000);
  await cluster.waitForHealthy(90_000);
});

it('keeps only max_timelines_history entries in /history after switchovers', async () => {
  for (let round = 0; round < 2; round++) {
    const leader = await cluster.waitForHealthy(90_000);
    const candidate = cluster.nodes.find((node) => node !== leader)!;
    expect((await post(leader, '/switchover', { leader: leader.name, candidate: candidate.name })).status).toBe(200);
    await waitFor(async () => (await candidate.healthCode('/primary')) === 200, {
      timeoutMs: 60_000,
      description: `${candidate.name} leading`,
    });
  }
  await cluster.waitForHealthy(90_000);
  // Timeline 3 after two switchovers: PostgreSQL's history file has 2 entries, /history keeps the newest.
  await waitFor(() => existsSync(callLog) && JSON.parse(etcdGet('/service/programs/history') || '[]')[0]?.[0] === 2, {
    timeoutMs: 30_000,
    description: '/history trimmed to the switch to timeline 3',
  });
  const history = JSON.parse(etcdGet('/service/programs/history')) as unknown[][];
  expect(history).toHaveLength(1);
  expect(history[0][0]).toBe(2);
});

it('keeps the data directory of a former primary whose pg_rewind failed when remove_data_directory_on_rewind_failure is off', async () => {
  const leader = await cluster.waitForHealthy(90_000);
  const candidate = cluster.nodes.find((node) => node !== leader)!;
  const off = {
    postgresql: { remove_data_directory_on_rewind_failure: false, remove_data_directory_on_diverged_timelines: false },
  };
  expect((await post(leader, '/config', off, 'PATCH')).status).toBe(200);
  const clonesBefore = calls().filter((line) => line.startsWith('pg_basebackup ')).length;
  const systemBefore = readFileSync(join(leader.dataDir, 'global', 'pg_control'))
    .subarray(0, 8)
    .toString('hex');
  writeFileSync(rewindFails, '');

  // A power cut of the leader: the other node takes over, and the former primary must rewind when it comes back.
  await leader.powerCut();
  await waitFor(async () => (await candidate.healthCode('/primary')) === 200, {
    timeoutMs: 60_000,
    description: `${candidate.name} leading`,
  });
  leader.start();
  await waitFor(
    () =>
      readFileSync(leader.logPath, 'utf8').includes(
        'remove_data_directory_on_rewind_failure is off: keeping the data directory',
      ),
    {
      timeoutMs: 60_000,
      description: `${leader.name} refusing to remove its data directory after the failed pg_rewind`,
    },
  );
  // pg_rewind ran (and failed); the server is down, not cloned: no pg_basebackup ran, and pg_control is as it was.
  expect(calls().some((line) => line.startsWith(`pg_rewind --target-pgdata ${leader.dataDir}`))).toBe(true);
  expect(await leader.healthCode('/replica')).not.toBe(200);
  expect(calls().filter((line) => line.startsWith('pg_basebackup ')).length).toBe(clonesBefore);
  expect(
    readFileSync(join(leader.dataDir, 'global', 'pg_control'))
      .subarray(0, 8)
      .toString('hex'),
  ).toBe(systemBefore);

  // Once pg_rewind works again, the rejoin tried after its backoff brings it back as a replica.
  rmSync(rewindFails, { force: true });
  await cluster.waitForHealthy(90_000);
  expect(calls().filter((line) => line.startsWith('pg_basebackup ')).length).toBe(clonesBefore);
});
