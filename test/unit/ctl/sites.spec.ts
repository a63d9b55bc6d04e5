import { clusterDocument, FakeNode, json, statorctl, text } from './fake-node';

/** The 3-member cluster of fake-node.ts with node1 and node2 in dc1, node3 in dc2 (and nofailover dropped, so it may take over). */
function sitedCluster(base: string, sites: Array<string | undefined> = ['dc1', 'dc1', 'dc2']) {
  const cluster = clusterDocument(base);
  cluster.members = cluster.members.map((member, index) => {
    const { tags: _tags, ...rest } = member as typeof member & { tags?: unknown };
    return { ...rest, ...(sites[index] ? { site: sites[index] } : {}) };
  });
  return cluster;
}

describe('statorctl and sites (Patroni site awareness)', () => {
  let node: FakeNode;
  beforeEach(async () => {
    node = await new FakeNode({}).start();
    node.routes['GET /cluster'] = json(sitedCluster(node.url));
  });
  afterEach(() => node.stop());

  it('list shows a Site column when the members are in several sites, and --site keeps one', async () => {
    const lines = (await statorctl(['--api', node.url, 'list'])).stdout.split('\n');
    expect(lines[1]).toBe(
      '| Site | Member | Host           | Role    | State     | TL | Lag in MB | Pending restart | Tags |',
    );
    expect(lines[5]).toBe(
      '| dc2  | node3  | 127.0.0.1:5434 | Replica | streaming |  4 |         0 |                 |      |',
    );
    const dc2 = (await statorctl(['--api', node.url, 'list', '--site', 'dc2'])).stdout
      .split('\n')
      .filter((line) => line.startsWith('| dc'));
    expect(dc2).toEqual([
      '| dc2  | node3  | 127.0.0.1:5434 | Replica | streaming |  4 |         0 |                 |      |',
    ]);
    const rows = JSON.parse((await statorctl(['--api', node.url, 'list', '--format', 'json'])).stdout) as Record<
      string,
      unknown
    >[];
    expect(Object.keys(rows[0]).slice(0, 3)).toEqual(['Cluster', 'Site', 'Member']);
  });

  it('list names a single site in the title, and nothing without sites', async () => {
    node.routes['GET /cluster'] = json(sitedCluster(node.url, ['dc1', 'dc1', 'dc1']));
    const one = (await statorctl(['--api', node.url, 'list'])).stdout.split('\n');
    expect(one[0]).toMatch(/^\+ Site: dc1, Cluster: demo -+\+/);
    expect(one[1]).toMatch(/^\| Member \|/);
    node.routes['GET /cluster'] = json(sitedCluster(node.url, [undefined, undefined, undefined]));
    expect((await statorctl(['--api', node.url, 'list'])).stdout).toMatch(/^\+ Cluster: demo -+\+/);
  });

  it("switchover --site offers that site's members, asks about the site change and posts the site", async () => {
    node.routes['POST /switchover'] = text('Switchover scheduled', 202);
    const result = await statorctl(
      ['--api', node.url, 'switchover', '--site', 'dc2'],
      ['', '', '2030-01-31T12:00Z', 'y'],
    );
    expect(result.questions.slice(1)).toEqual([
      "Candidate ['node3'] []: ",
      expect.stringMatching(/^When should the switchover take place/),
      'Are you sure you want to schedule switchover of cluster demo at 2030-01-31T12:00Z, demoting current leader node1 in site dc1 and switching to site dc2? [y/N]: ',
    ]);
    expect(node.received.find((r) => r.method === 'POST')?.body).toEqual({
      leader: 'node1',
      site: 'dc2',
      scheduled_at: '2030-01-31T12:00Z',
    });
  });

  it('refuses an unknown site, --site with --candidate, and a failover candidate outside the site', async () => {
    expect(await statorctl(['--api', node.url, 'switchover', '--site', 'dc9', '--force'])).toMatchObject({
      code: 1,
      stderr: 'Error: Site dc9 does not exist in cluster demo\n',
    });
    expect(
      await statorctl(['--api', node.url, 'switchover', '--site', 'dc2', '--candidate', 'node3', '--force']),
    ).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^statorctl: --candidate and --site are mutually exclusive options\n/),
    });
    const outside = await statorctl(['--api', node.url, 'failover', '--site', 'dc2'], ['node2']);
    expect(outside).toMatchObject({
      code: 1,
      stderr: 'Error: Member node2 does not exist in site dc2 of cluster demo or is tagged as nofailover\n',
    });
    expect(node.received.filter((r) => r.method === 'POST')).toEqual([]);
  });
});
