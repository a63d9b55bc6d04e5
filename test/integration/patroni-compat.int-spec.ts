import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { LocalCluster } from '../../scripts/lib/local-cluster';
import { freePort } from '../../scripts/lib/ports';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { sql } from '../helpers/sql';

/**
 * Settings Patroni's own acceptance harness writes, on a real node: `wal_keep_segments` in the
 * dynamic configuration (renamed wal_keep_size since PostgreSQL 13), tag values as strings, and a
 * second agent started under the name of a live member.
 */
jest.setTimeout(120_000);

let cluster: LocalCluster;
let baseDir: string;

beforeAll(async () => {
  baseDir = tmpDir('stator-compat-');
  cluster = await LocalCluster.start({
    nodes: 1,
    baseDir,
    ttl: 10,
    loopWait: 2,
    retryTimeout: 4,
    dcs: { postgresql: { parameters: { wal_keep_segments: 100 } } },
    tags: { 1: { failover_priority: '2', nofailover: 'false' } },
  });
  await cluster.waitForLeader(60_000);
});

afterAll(async () => {
  await cluster?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

it('maps wal_keep_segments to wal_keep_size on PostgreSQL 15, and reads string tags (publishing failover_priority as written)', async () => {
  const [node] = cluster.nodes;
  expect(await sql<{ wal_keep_size: string }>(node, 'SHOW wal_keep_size')).toEqual([{ wal_keep_size: '1600MB' }]);
  expect((await node.status())?.tags).toMatchObject({ failover_priority: '2', nofailover: false });
});

it("refuses to start a second agent under a live member's name, as the reference does, even one announcing the live member's API address", async () => {
  const [node] = cluster.nodes;
  const config = parse(readFileSync(node.configPath, 'utf8')) as Record<string, Record<string, unknown>>;
  const apiPort = await freePort();
  const pgPort = await freePort();
  // As Patroni's acceptance harness starts its duplicate: another listen port, the live member's connect_address.
  const twin = {
    ...config,
    restapi: { ...config.restapi, listen: `127.0.0.1:${apiPort}` },
    postgresql: {
      ...config.postgresql,
      listen: `127.0.0.1:${pgPort}`,
      connect_address: `127.0.0.1:${pgPort}`,
      data_dir: join(baseDir, 'twin', 'data'),
    },
    state_dir: join(baseDir, 'twin', 'state'),
  };
  const file = join(baseDir, 'twin.yml');
  writeFileSync(file, stringify(twin));
  const run = spawnSync(process.execPath, [join(__dirname, '..', '..', 'bin', 'stator.js'), file], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  expect(run.status).toBe(1);
  expect(run.stdout).toContain(`CRITICAL: Can't start; there is already a node named '${node.name}' running`);
  expect(run.stdout).not.toContain('released leader key');
  expect(await node.healthCode('/primary')).toBe(200);
});
