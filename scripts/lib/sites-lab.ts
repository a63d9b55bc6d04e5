import { ChildProcess, execFileSync } from 'node:child_process';
import { EtcdHandle } from './etcd';
import { NodeNetwork } from './local-cluster';
import { delayerReady, NetnsLab, QUEUE_TO_DELAYER, startDelayer } from './netns-lab';

/** One data centre of the lab: its nodes and etcd members, by index (from 1). */
export interface Site {
  name: string;
  nodes: number[];
  etcd: number[];
}

/**
 * Data centres on one machine, built on NetnsLab: every node and etcd member keeps a namespace of its own on the
 * lab's bridge, and a site is the set of them that share its name. Between sites, every packet waits
 * `latencyMs` (one way) in the sender's namespace: the nfqueue delayer of the partition scenarios, since this
 * kernel has no sch_netem; only packets to another site's addresses are queued, so a site's own traffic and the
 * clients' links stay fast. Cutting a site off drops (nftables, in each of its namespaces) every packet to or from
 * another site's addresses: inside the site, etcd members and nodes still reach each other, and clients still
 * reach every node, as when a data centre's uplink fails.
 */
export class SitesLab {
  private readonly delayers: ChildProcess[] = [];

  private constructor(
    readonly lab: NetnsLab,
    readonly sites: Site[],
    readonly etcd: EtcdHandle,
    private readonly nodeNetwork: NodeNetwork,
  ) {}

  /** The lab and its etcd cluster (serving); latency between sites starts with `delayBetweenSites`. */
  static async create(dir: string, sites: Site[]): Promise<SitesLab> {
    const lab = NetnsLab.create(dir);
    try {
      const members = sites.flatMap((site) => site.etcd).length;
      const etcd = await lab.startEtcd(members);
      // The nodes' namespaces, before the delayers that run in them.
      const network = {
        ...lab.network(etcd, sites.flatMap((site) => site.nodes).length),
        etcdHosts: lab.etcdHosts(members),
      };
      return new SitesLab(lab, sites, etcd, network);
    } catch (error) {
      lab.destroy();
      throw error;
    }
  }

  /** What LocalCluster needs to run each node in its namespace; the node's `site` is `siteOf(index)`. */
  network(): NodeNetwork {
    return this.nodeNetwork;
  }

  /** `{ nodeIndex: siteName }`, as LocalCluster's `sites` option wants it. */
  nodeSites(): Record<number, string> {
    return Object.fromEntries(this.sites.flatMap((site) => site.nodes.map((node) => [node, site.name])));
  }

  siteOf(node: number): string {
    return this.sites.find((site) => site.nodes.includes(node))!.name;
  }

  /** Drops every packet between `name`'s namespaces and the other sites' until `reconnect(name)`. */
  cutOff(name: string): void {
    const outside = this.addressesOutside(name).join(', ');
    const script = [
      'add table inet sitecut',
      'add chain inet sitecut input { type filter hook input priority 0; }',
      'add chain inet sitecut output { type filter hook output priority 0; }',
      `add rule inet sitecut input iifname "eth0" ip saddr { ${outside} } drop`,
      `add rule inet sitecut output oifname "eth0" ip daddr { ${outside} } drop`,
    ].join('\n');
    for (const namespace of this.namespacesOf(name)) {
      execFileSync('ip', ['netns', 'exec', namespace, 'nft', '-f', '-'], {
        input: script,
        stdio: ['pipe', 'ignore', 'pipe'],
      });
    }
  }

  /** Ends `cutOff(name)`. */
  reconnect(name: string): void {
    for (const namespace of this.namespacesOf(name)) {
      execFileSync('ip', ['netns', 'exec', namespace, 'nft', 'delete', 'table', 'inet', 'sitecut'], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
    }
  }

  destroy(): void {
    for (const delayer of this.delayers) delayer.kill('SIGKILL');
    this.lab.destroy();
  }

  /**
   * Each namespace delays what it sends to another site: a packet waits once, on its sender's side. The delayer cannot
   * carry a bulk copy (a pg_basebackup, or pg_rewind copying ~100 MB, stalled for minutes behind it): start it once the
   * replicas are cloned, and end it before a heal that needs a rewind across the sites.
   */
  async delayBetweenSites(ms: number): Promise<void> {
    for (const site of this.sites) {
      const outside = this.addressesOutside(site.name).join(',');
      for (const namespace of this.namespacesOf(site.name)) {
        const delayer = startDelayer(namespace, ms);
        this.delayers.push(delayer);
        await delayerReady(delayer);
        execFileSync(
          'ip',
          [
            'netns',
            'exec',
            namespace,
            'iptables',
            '-t',
            'mangle',
            '-A',
            'OUTPUT',
            '-o',
            'eth0',
            '-d',
            outside,
            ...QUEUE_TO_DELAYER,
          ],
          {
            stdio: ['ignore', 'ignore', 'pipe'],
          },
        );
      }
    }
  }

  /** Ends `delayBetweenSites`: new packets pass at once, held ones are let through (SIGTERM). */
  stopDelaying(): void {
    for (const site of this.sites) {
      for (const namespace of this.namespacesOf(site.name)) {
        execFileSync('ip', ['netns', 'exec', namespace, 'iptables', '-t', 'mangle', '-F'], {
          stdio: ['ignore', 'ignore', 'pipe'],
        });
      }
    }
    for (const delayer of this.delayers.splice(0)) delayer.kill('SIGTERM');
  }

  private namespacesOf(name: string): string[] {
    const site = this.sites.find((s) => s.name === name);
    if (!site) throw new Error(`no site ${name} in the lab`);
    return [
      ...site.etcd.map((member) => this.lab.namespaceOf(`e${member}`)),
      ...site.nodes.map((node) => this.lab.namespaceOf(`n${node}`)),
    ];
  }

  /** The cluster-network addresses of every other site's etcd members and nodes. */
  private addressesOutside(name: string): string[] {
    return this.sites
      .filter((site) => site.name !== name)
      .flatMap((site) => [...site.etcd.map(NetnsLab.etcdAddress), ...site.nodes.map(NetnsLab.clusterAddress)]);
  }
}
