import { readFileSync, writeFileSync } from 'node:fs';
import { parse, stringify } from 'yaml';
import { isAlive, LocalCluster } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';

/**
 * The signals an operator sends routinely, on a real leader: SIGHUP reloads the configuration file
 * (as systemd's ExecReload and the reference do) and SIGUSR2 is ignored; neither ends the agent or
 * its leader's term.
 */
jest.setTimeout(120_000);

let cluster: LocalCluster;
let baseDir: string;

beforeAll(async () => {
  baseDir = tmpDir('stator-signals-');
  cluster = await LocalCluster.start({ nodes: 1, baseDir, ttl: 10, loopWait: 2, retryTimeout: 4 });
  await cluster.waitForLeader(60_000);
});

afterAll(async () => {
  await cluster?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

it('reloads the configuration file on SIGHUP and stays the leader', async () => {
  const [leader] = cluster.nodes;
  const file = parse(readFileSync(leader.configPath, 'utf8')) as Record<string, unknown>;
  writeFileSync(leader.configPath, stringify({ ...file, tags: { datacenter: 'dc-after-reload' } }));
  const pid = leader.pid!;
  process.kill(pid, 'SIGHUP');
  await waitFor(async () => ((await leader.status())?.tags as Record<string, unknown> | undefined)?.datacenter === 'dc-after-reload', {
    timeoutMs: 10_000,
    description: 'the reloaded tag in the status document',
  });
  expect(isAlive(pid)).toBe(true);
  expect(await leader.healthCode('/primary')).toBe(200);
});

it('ignores SIGUSR2, whose default would end the process', async () => {
  const [leader] = cluster.nodes;
  const pid = leader.pid!;
  process.kill(pid, 'SIGUSR2');
  // Watched over a whole HA cycle (loop_wait 2 s): a process that signal ends is gone within milliseconds.
  for (const until = Date.now() + 2500; Date.now() < until; await new Promise((resolve) => setTimeout(resolve, 100))) {
    expect(isAlive(pid)).toBe(true);
  }
  expect(await leader.healthCode('/primary')).toBe(200);
});
