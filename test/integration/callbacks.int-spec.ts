import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalCluster } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';

/**
 * `postgresql.callbacks` on a real 2-node cluster: each node's callback appends
 * `<node> <action> <role> <scope>` to a shared file, and the test reads the file as an operator
 * moving a virtual IP would rely on it.
 */
jest.setTimeout(120_000);

let cluster: LocalCluster;
let baseDir: string;
let calls: string;

const lines = () => {
  try {
    return readFileSync(calls, 'utf8').trim().split('\n');
  } catch {
    return [];
  }
};

beforeAll(async () => {
  baseDir = tmpDir('stator-callbacks-');
  calls = join(baseDir, 'calls.log');
  writeFileSync(calls, '');
  chmodSync(calls, 0o666);
  const script = join(baseDir, 'callback.sh');
  writeFileSync(script, `#!/bin/sh\necho "$@" >> ${calls}\n`);
  chmodSync(script, 0o755);
  const commands = (index: number) =>
    Object.fromEntries(
      ['on_start', 'on_stop', 'on_restart', 'on_role_change'].map((action) => [action, `${script} node${index}`]),
    );
  cluster = await LocalCluster.start({
    nodes: 2,
    baseDir,
    ttl: 10,
    loopWait: 2,
    retryTimeout: 4,
    postgresql: (index) => ({ callbacks: commands(index) }),
  });
  const leader = await cluster.waitForLeader(60_000);
  await cluster.waitForStreaming(
    cluster.nodes.filter((node) => node !== leader).map((node) => node.name),
    60_000,
  );
});

afterAll(async () => {
  await cluster?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

it('calls on_start on both nodes, then on_role_change on both sides of a switchover, and records each call', async () => {
  const leader = await cluster.waitForLeader(10_000);
  const replica = cluster.nodes.find((node) => node !== leader)!;
  await waitFor(() => lines().includes(`${replica.name} on_start replica demo`), {
    timeoutMs: 10_000,
    description: 'the replica on_start callback',
  });
  expect(lines()).toContain(`${leader.name} on_start primary demo`);

  const response = await fetch(`${leader.apiUrl.replace(/\/stator$/, '')}/switchover`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ leader: leader.name, candidate: replica.name }),
  });
  expect(response.status).toBe(200);
  await waitFor(
    () =>
      lines().includes(`${replica.name} on_role_change primary demo`) &&
      lines().includes(`${leader.name} on_role_change replica demo`),
    {
      timeoutMs: 30_000,
      description: 'on_role_change on the new primary and on the former one',
    },
  );

  // The former primary comes back as a replica through a role change, not a start.
  expect(lines().filter((line) => line.startsWith(`${leader.name} on_start`))).toEqual([
    `${leader.name} on_start primary demo`,
  ]);

  const events = (await (
    await fetch(`${replica.apiUrl.replace(/\/stator$/, '')}/events?stream=node/${replica.name}/callbacks`)
  ).json()) as { type: string; data: Record<string, unknown> }[];
  const finishedChanges = events.filter(
    (event) => event.type === 'callback.finished' && event.data.action === 'on_role_change',
  );
  expect(finishedChanges.at(-1)?.data).toMatchObject({ role: 'primary', outcome: 'exited', exitCode: 0 });
});
