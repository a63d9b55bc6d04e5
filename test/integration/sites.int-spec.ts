import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { parse, stringify } from 'yaml';
import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';

/**
 * Patroni's site awareness on real etcd and PostgreSQL: node1 (dc1, failover_priority 2), node2 (dc1,
 * priority 1) and node3 (dc2, priority 5). The member keys, the status document, /cluster and `/status`
 * carry the sites; a switchover goes to a site; a failover stays in the leader's site although node3
 * has the highest priority, and crosses to dc2 only when nobody of dc1 is left.
 */
jest.setTimeout(180_000);

let cluster: LocalCluster;
let baseDir: string;
const SITES: Record<string, string> = { node1: 'dc1', node2: 'dc1', node3: 'dc2' };

beforeAll(async () => {
  baseDir = tmpDir('stator-sites-');
  cluster = await LocalCluster.start({
    nodes: 3,
    baseDir,
    ttl: 10,
    loopWait: 2,
    retryTimeout: 4,
    sites: { 1: 'dc1', 2: 'dc1', 3: 'dc2' },
    tags: { 1: { failover_priority: 2 }, 2: { failover_priority: 1 }, 3: { failover_priority: 5 } },
  });
  await cluster.waitForHealthy(90_000);
});

afterAll(async () => {
  await cluster?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

function etcdJson(key: string): Record<string, unknown> {
  const text = execFileSync(
    'etcdctl',
    [`--endpoints=${cluster.etcd.endpoint}`, 'get', '--print-value-only', `/service/${cluster.scope}/${key}`],
    {
      env: { ...process.env, ETCDCTL_API: '3' },
    },
  ).toString();
  return JSON.parse(text) as Record<string, unknown>;
}

async function post(node: LocalNode, path: string, body: unknown): Promise<{ status: number; text: string }> {
  const response = await fetch(`${node.apiUrl}${path}`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
  return { status: response.status, text: await response.text() };
}

/** The leader, once `/status` names its site as current_site. */
async function leaderWithCurrentSite(except: string[] = []): Promise<LocalNode> {
  const leader = await cluster.waitForLeader(40_000, except);
  await waitFor(() => etcdJson('status').current_site === SITES[leader.name], {
    timeoutMs: 20_000,
    description: `current_site ${SITES[leader.name]}`,
  });
  return leader;
}

it("publishes each node's site in its member key, its status document and /cluster, and the leader's in /status", async () => {
  for (const node of cluster.nodes) {
    expect(etcdJson(`members/${node.name}`).site).toBe(SITES[node.name]);
    expect((await node.status())?.site).toBe(SITES[node.name]);
  }
  const document = (await (await fetch(`${cluster.nodes[0].apiUrl}/cluster`)).json()) as {
    members: Array<{ name: string; site?: string }>;
  };
  expect(document.members.map((member) => [member.name, member.site])).toEqual([
    ['node1', 'dc1'],
    ['node2', 'dc1'],
    ['node3', 'dc2'],
  ]);
  await leaderWithCurrentSite();
});

it('refuses a switchover to a site without members, or to a candidate outside the named site, naming the site', async () => {
  const leader = await cluster.waitForLeader(10_000);
  expect(await post(leader, '/switchover', { leader: leader.name, site: 'dc9' })).toEqual({
    status: 412,
    text: 'switchover is not possible: can not find members in site dc9',
  });
  const other = leader.name === 'node3' ? 'node1' : 'node3';
  const wrongSite = SITES[other] === 'dc1' ? 'dc2' : 'dc1';
  expect(await post(leader, '/switchover', { leader: leader.name, candidate: other, site: wrongSite })).toEqual({
    status: 412,
    text: `site: candidate ${other} is not in site ${wrongSite} (its site: ${SITES[other]})`,
  });
  expect(await cluster.waitForLeader(5_000)).toBe(leader);
});

it('switches over to a site: to one of its members, whatever the priorities elsewhere', async () => {
  let leader = await cluster.waitForLeader(10_000);
  // Right after the start a replica may answer before its server does: the leader would find nobody to hand over to.
  await cluster.waitForStreaming(
    cluster.nodes.filter((node) => node !== leader).map((node) => node.name),
    30_000,
  );
  if (SITES[leader.name] === 'dc1') {
    expect(await post(leader, '/switchover', { leader: leader.name, site: 'dc2' })).toEqual({
      status: 200,
      text: 'Successfully switched over to "node3"',
    });
    leader = await leaderWithCurrentSite([leader.name]);
    expect(leader.name).toBe('node3');
  }
  // node3 (priority 5) is not of the site asked for. (Between node1 and node2 their priorities decide, but only on
  // equal WAL positions as their agents last read them: which one wins is not asserted here.)
  const answer = await post(leader, '/switchover', { leader: 'node3', site: 'dc1' });
  expect(answer).toEqual({ status: 200, text: expect.stringMatching(/^Successfully switched over to "node[12]"$/) });
  const newLeader = await leaderWithCurrentSite(['node3']);
  expect(SITES[newLeader.name]).toBe('dc1');
  await cluster.waitForStreaming(
    cluster.nodes.filter((node) => node !== newLeader).map((node) => node.name),
    30_000,
  );
});

it("fails over within the leader's site despite a higher priority elsewhere, and across sites only when the site is empty", async () => {
  const node3 = cluster.node('node3');
  const first = await cluster.waitForLeader(10_000);
  expect(SITES[first.name]).toBe('dc1');
  const other = cluster.node(first.name === 'node1' ? 'node2' : 'node1');
  const node3LogStart = readFileSync(node3.logPath, 'utf8').length;

  let stoppedAt = Date.now();
  await first.stop();
  const local = await leaderWithCurrentSite([first.name]);
  const localMs = Date.now() - stoppedAt;
  // node3 (priority 5) defers to the other member of dc1, if it races at all before that one holds the lock.
  expect(local).toBe(other);

  await cluster.waitForStreaming(['node3'], 30_000);
  stoppedAt = Date.now();
  await other.stop();
  const crossed = await leaderWithCurrentSite(['node1', 'node2']);
  const crossMs = Date.now() - stoppedAt;
  expect(crossed.name).toBe('node3');
  expect(readFileSync(node3.logPath, 'utf8').slice(node3LogStart)).toContain(
    'No members in the current site dc1. Performing cross-site failover',
  );
  process.stdout.write(
    `sites: ${first.name} stopped -> ${other.name} (dc1) leads in ${(localMs / 1000).toFixed(1)} s; ${other.name} stopped -> node3 (dc2) leads in ${(crossMs / 1000).toFixed(1)} s\n`,
  );
});

it('keeps the site it started with when a reload reads another one, and says so', async () => {
  const node3 = cluster.node('node3');
  const file = parse(readFileSync(node3.configPath, 'utf8')) as Record<string, unknown>;
  writeFileSync(node3.configPath, stringify({ ...file, site: 'dc9' }));
  const logStart = readFileSync(node3.logPath, 'utf8').length;
  expect((await fetch(`${node3.apiUrl}/reload`, { method: 'POST' })).status).toBe(202);
  await waitFor(
    () =>
      readFileSync(node3.logPath, 'utf8')
        .slice(logStart)
        .includes('site changed from dc2 to dc9 in the file: it takes effect at the next start'),
    {
      timeoutMs: 20_000,
      description: 'the warning about the site',
    },
  );
  expect((await node3.status())?.site).toBe('dc2');
  expect(etcdJson('members/node3').site).toBe('dc2');
  expect(etcdJson('status').current_site).toBe('dc2');
});
