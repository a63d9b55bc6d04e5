import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { EtcdHandle, freezeProcess } from './etcd';
import { NodeNetwork } from './local-cluster';
import { waitFor } from './wait-for';

/** The latency helper, beside this file in the source tree (also when this file runs from `dist/`). */
const DELAYER = [join(__dirname, 'nfqueue-delay.py'), join(__dirname, '../../../scripts/lib/nfqueue-delay.py')].find(
  existsSync,
)!;
const DELAYER_QUEUE = 7;
/** The iptables target that hands a packet to the delayer (--queue-bypass: should it die, packets pass instead of being dropped). */
export const QUEUE_TO_DELAYER = ['-j', 'NFQUEUE', '--queue-num', String(DELAYER_QUEUE), '--queue-bypass'];

/** Starts `nfqueue-delay.py` in `namespace`, holding each packet queued to it for `ms` milliseconds. */
export function startDelayer(namespace: string, ms: number): ChildProcess {
  return spawn('ip', ['netns', 'exec', namespace, '/usr/bin/python3', DELAYER, String(DELAYER_QUEUE), String(ms)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

/** Resolves once the delayer is bound to its queue. */
export function delayerReady(delayer: ChildProcess): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    delayer.stdout!.once('data', () => resolve());
    delayer.once('exit', (code) => reject(new Error(`nfqueue-delay.py ended (${code}) before it was ready`)));
  });
}

/**
 * Hosts of their own on one machine: a network namespace per etcd member and per node, all on one
 * bridge (the cluster network, 10.213.1.0/24), and for each node a separate link to this process
 * (10.213.<10 + i>.0/30), the way its clients reach it. Cutting a node's cluster link partitions it
 * from etcd and its peers while its clients still reach it. Every address is one this lab creates;
 * nothing is sent anywhere else. Needs root and iproute2 (`ip netns`, veth, bridge).
 *
 * Packet loss comes from nftables inside the namespace. Latency would need tc netem, whose kernel
 * module (sch_netem) this machine's kernel lacks: instead iptables hands the namespace's packets to
 * a netfilter queue, and `nfqueue-delay.py` releases each one a fixed time later.
 */
const running = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

export class NetnsLab {
  /** Namespaces, interfaces and processes are named after this, so a lab never touches another's. */
  private readonly id: string;
  private readonly namespaces: string[] = [];
  private readonly rootLinks: string[] = [];
  private readonly bridge: string;
  private readonly etcdChildren: ChildProcess[] = [];
  /** The delaying process of each node under a latency fault. */
  private readonly delayers = new Map<number, ChildProcess>();

  private constructor(private readonly dir: string) {
    this.id = `sl${Math.floor(Math.random() * 0xffff)
      .toString(16)
      .padStart(4, '0')}`;
    this.bridge = `${this.id}br`;
  }

  /** Whether this process may build a lab (root, with `ip netns`). */
  static available(): boolean {
    if (process.getuid?.() !== 0) return false;
    try {
      execFileSync('ip', ['netns', 'list'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  }

  static create(dir: string): NetnsLab {
    NetnsLab.removeLeftovers();
    const lab = new NetnsLab(dir);
    mkdirSync(dir, { recursive: true });
    lab.ip('link', 'add', lab.bridge, 'type', 'bridge');
    lab.rootLinks.push(lab.bridge);
    lab.ip('addr', 'add', '10.213.1.254/24', 'dev', lab.bridge);
    lab.ip('link', 'set', lab.bridge, 'up');
    return lab;
  }

  /**
   * A lab whose test process was killed never ran `destroy`: its namespaces and bridge would hold the
   * addresses this lab needs. Only names this class gives (`sl<4 hex>-...`) are touched.
   */
  private static removeLeftovers(): void {
    const names = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })
      .split('\n')
      .map((line) => line.split(' ')[0])
      .filter((name) => /^sl[0-9a-f]{4}-[en]\d+$/.test(name));
    for (const namespace of names) {
      for (const pid of execFileSync('ip', ['netns', 'pids', namespace], { encoding: 'utf8' })
        .split('\n')
        .filter(Boolean)) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // gone
        }
      }
      execFileSync('ip', ['netns', 'del', namespace], { stdio: 'ignore' });
    }
    const links = execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' })
      .split('\n')
      .map((line) => /^\d+: ([^:@]+)/.exec(line)?.[1])
      .filter((name): name is string => name !== undefined && /^sl[0-9a-f]{4}(br|e\d+|n\d+|c\d+)$/.test(name));
    for (const link of links) {
      try {
        execFileSync('ip', ['link', 'del', link], { stdio: 'ignore' });
      } catch {
        // went with its namespace
      }
    }
  }

  static etcdAddress(member: number): string {
    return `10.213.1.${10 + member}`;
  }

  static clusterAddress(node: number): string {
    return `10.213.1.${20 + node}`;
  }

  static clientAddress(node: number): string {
    return `10.213.${10 + node}.2`;
  }

  /** The namespace of etcd member `e<i>` or node `n<i>` (from 1). */
  namespaceOf(tag: string): string {
    return `${this.id}-${tag}`;
  }

  /** A namespace on the cluster bridge at `address`, its bridge-side interface named `<id><tag>`. */
  private host(tag: string, address: string): string {
    const namespace = `${this.id}-${tag}`;
    this.ip('netns', 'add', namespace);
    this.namespaces.push(namespace);
    this.ip('-n', namespace, 'link', 'set', 'lo', 'up');
    const outside = `${this.id}${tag}`;
    this.ip('link', 'add', outside, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', namespace);
    this.rootLinks.push(outside);
    this.ip('link', 'set', outside, 'master', this.bridge);
    this.ip('link', 'set', outside, 'up');
    this.ip('-n', namespace, 'addr', 'add', `${address}/24`, 'dev', 'eth0');
    this.ip('-n', namespace, 'link', 'set', 'eth0', 'up');
    return namespace;
  }

  /** Namespace of node `index` (from 1), with its cluster link and its client link. */
  addNode(index: number): string {
    const namespace = this.host(`n${index}`, NetnsLab.clusterAddress(index));
    const outside = `${this.id}c${index}`;
    this.ip('link', 'add', outside, 'type', 'veth', 'peer', 'name', 'client0', 'netns', namespace);
    this.rootLinks.push(outside);
    this.ip('addr', 'add', `10.213.${10 + index}.1/30`, 'dev', outside);
    this.ip('link', 'set', outside, 'up');
    this.ip('-n', namespace, 'addr', 'add', `${NetnsLab.clientAddress(index)}/30`, 'dev', 'client0');
    this.ip('-n', namespace, 'link', 'set', 'client0', 'up');
    return namespace;
  }

  /** Cuts node `index` off the cluster network (etcd and its peers); its clients still reach it. */
  partitionNode(index: number): void {
    this.ip('link', 'set', `${this.id}n${index}`, 'down');
  }

  healNode(index: number): void {
    this.ip('link', 'set', `${this.id}n${index}`, 'up');
  }

  /** Drops `percent` % of the packets node `index` sends and receives on its cluster link. */
  loseOnNode(index: number, percent: number): void {
    const namespace = `${this.id}-n${index}`;
    const rule = (hook: string, direction: string) => [
      `add chain inet lossy ${hook} { type filter hook ${hook} priority 0; }`,
      `add rule inet lossy ${hook} ${direction} "eth0" numgen random mod 100 < ${percent} drop`,
    ];
    const script = ['add table inet lossy', ...rule('input', 'iifname'), ...rule('output', 'oifname')].join('\n');
    execFileSync('ip', ['netns', 'exec', namespace, 'nft', '-f', '-'], {
      input: script,
      stdio: ['pipe', 'ignore', 'pipe'],
    });
  }

  /** Ends `loseOnNode`. */
  stopLosingOnNode(index: number): void {
    execFileSync('ip', ['netns', 'exec', `${this.id}-n${index}`, 'nft', 'delete', 'table', 'inet', 'lossy'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
  }

  /**
   * Delays every packet node `index` sends and receives on its cluster link by `ms` milliseconds (a
   * round trip to etcd or a peer takes 2 × `ms` more). Resolves once the delay applies.
   */
  async delayOnNode(index: number, ms: number): Promise<void> {
    const namespace = `${this.id}-n${index}`;
    const delayer = startDelayer(namespace, ms);
    this.delayers.set(index, delayer);
    await delayerReady(delayer);
    this.iptables(namespace, '-A', 'OUTPUT', '-o', 'eth0', ...QUEUE_TO_DELAYER);
    this.iptables(namespace, '-A', 'PREROUTING', '-i', 'eth0', ...QUEUE_TO_DELAYER);
  }

  /** Ends `delayOnNode`: new packets pass at once, held ones are let through. */
  async stopDelayingOnNode(index: number): Promise<void> {
    const namespace = `${this.id}-n${index}`;
    this.iptables(namespace, '-F');
    const delayer = this.delayers.get(index);
    this.delayers.delete(index);
    if (!delayer || delayer.exitCode !== null) return;
    const exited = new Promise((resolve) => delayer.once('exit', resolve));
    delayer.kill('SIGTERM');
    await exited;
  }

  private iptables(namespace: string, ...args: string[]): void {
    execFileSync('ip', ['netns', 'exec', namespace, 'iptables', '-t', 'mangle', ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
  }

  /** Cuts etcd member `member` off the cluster network. */
  partitionEtcd(member: number): void {
    this.ip('link', 'set', `${this.id}e${member}`, 'down');
  }

  healEtcd(member: number): void {
    this.ip('link', 'set', `${this.id}e${member}`, 'up');
  }

  /** A 3-member etcd cluster, one member per namespace; resolves once it serves reads. */
  async startEtcd(members = 3): Promise<EtcdHandle> {
    const peers = Array.from(
      { length: members },
      (_, i) => `e${i + 1}=http://${NetnsLab.etcdAddress(i + 1)}:2380`,
    ).join(',');
    const spawnMember = (member: number): ChildProcess => {
      const address = NetnsLab.etcdAddress(member);
      const log = openSync(join(this.dir, `etcd${member}.log`), 'a');
      const child = spawn(
        'ip',
        [
          'netns',
          'exec',
          this.namespaceOf(`e${member}`),
          process.env.ETCD_BINARY ?? '/usr/bin/etcd',
          `--name=e${member}`,
          `--data-dir=${join(this.dir, `etcd${member}`)}`,
          `--listen-client-urls=http://${address}:2379`,
          `--advertise-client-urls=http://${address}:2379`,
          `--listen-peer-urls=http://${address}:2380`,
          `--initial-advertise-peer-urls=http://${address}:2380`,
          // Read only while the data directory is empty: a member started again on its data rejoins as it was.
          `--initial-cluster=${peers}`,
          '--initial-cluster-state=new',
          '--heartbeat-interval=100',
          '--election-timeout=1000',
          // A member cut off and back must not disrupt the leader with its higher term (etcd 3.4's default is off).
          '--pre-vote',
          '--log-level=warn',
        ],
        { stdio: ['ignore', log, log] },
      );
      closeSync(log);
      return child;
    };
    for (let member = 1; member <= members; member++) this.host(`e${member}`, NetnsLab.etcdAddress(member));
    for (let member = 1; member <= members; member++) this.etcdChildren.push(spawnMember(member));
    const endpoint = `${NetnsLab.etcdAddress(1)}:2379`;
    const serving = () =>
      waitFor(() => this.etcdServes(endpoint), {
        timeoutMs: 20_000,
        description: `etcd cluster serving on ${endpoint}`,
      });
    await serving();
    const children = this.etcdChildren;
    const signalAll = (signal: NodeJS.Signals) =>
      children.forEach((child) => child.pid && running(child) && process.kill(child.pid, signal));
    return {
      endpoint,
      clientPort: 2379,
      peerPort: 2380,
      dataDir: this.dir,
      get pid() {
        return children[0].pid!;
      },
      stop: async () => signalAll('SIGKILL'),
      pause: async () => void (await Promise.all(children.map((child) => freezeProcess(child.pid!)))),
      resume: () => signalAll('SIGCONT'),
      // A power cut of every member (SIGKILL), then each one started again on its data (chaos' whole-cluster power cut).
      restart: async (options) => {
        if (options?.empty) throw new Error('an empty restart of the namespace etcd cluster is not supported');
        const exited = children.map(
          (child) => new Promise((resolve) => (running(child) ? child.once('exit', resolve) : resolve(null))),
        );
        signalAll('SIGCONT');
        signalAll('SIGKILL');
        await Promise.all(exited);
        children.splice(0, children.length, ...Array.from({ length: members }, (_, i) => spawnMember(i + 1)));
        await serving();
      },
    };
  }

  etcdHosts(members = 3): string[] {
    return Array.from({ length: members }, (_, i) => `${NetnsLab.etcdAddress(i + 1)}:2379`);
  }

  /** What LocalCluster needs to run node `i` in namespace `<id>-n<i>`. */
  network(etcd: EtcdHandle, nodes: number): NodeNetwork {
    for (let index = 1; index <= nodes; index++) this.addNode(index);
    return {
      etcd,
      etcdHosts: this.etcdHosts(),
      prefix: (index) => ['ip', 'netns', 'exec', `${this.id}-n${index}`],
      clusterAddress: NetnsLab.clusterAddress,
      clientAddress: NetnsLab.clientAddress,
    };
  }

  /** Kills whatever still runs in the lab's namespaces, then removes them and their links. */
  destroy(): void {
    for (const child of [...this.etcdChildren, ...this.delayers.values()]) child.kill('SIGKILL');
    for (const namespace of this.namespaces) {
      const pids = execFileSync('ip', ['netns', 'pids', namespace], { encoding: 'utf8' }).split('\n').filter(Boolean);
      for (const pid of pids) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // gone
        }
      }
    }
    for (const link of this.rootLinks.reverse()) this.ipQuietly('link', 'del', link);
    for (const namespace of this.namespaces) this.ipQuietly('netns', 'del', namespace);
  }

  private async etcdServes(endpoint: string): Promise<boolean> {
    const response = await fetch(`http://${endpoint}/v3/kv/range`, {
      method: 'POST',
      body: JSON.stringify({ key: Buffer.from('ready').toString('base64') }),
      signal: AbortSignal.timeout(500),
    });
    return response.ok;
  }

  private ip(...args: string[]): void {
    execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  }

  private ipQuietly(...args: string[]): void {
    try {
      this.ip(...args);
    } catch {
      // already gone
    }
  }
}
