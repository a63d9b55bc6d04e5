import { ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { setPriority } from 'node:os';
import { join } from 'node:path';
import { ETCD_BINARY, EtcdHandle, freezeProcess, readinessProbe } from './etcd';
import { freePort } from './ports';
import { removeDir, tmpDir } from './tmp';
import { waitFor } from './wait-for';

/**
 * A multi-member etcd cluster on loopback (three processes, as a production etcd is run), shared by a
 * fleet of clusters: `npm run fleet-bench` and the fleet integration spec. Members are stopped by PID.
 */
export interface EtcdClusterOptions {
  members?: number;
  /**
   * etcd's own heartbeat and election timeouts (100 ms / 1 s), as a production etcd runs: the fleet bench
   * measures what etcd costs. Default: the tests' short ones (50 ms / 500 ms), for a quick start.
   */
  productionTimeouts?: boolean;
  /**
   * The members' niceness (-20 to 19; below 0 needs root), as `setpriority` sets it: the fleet bench's
   * `--etcd-priority`, an etcd that stands in for one on hosts of its own while a whole fleet shares its 2 cores.
   */
  niceness?: number;
}

export interface EtcdMember {
  name: string;
  /** `127.0.0.1:<client port>`. */
  endpoint: string;
  clientPort: number;
  readonly pid: number;
  /** SIGKILL; resolves once the process has exited. */
  kill(): Promise<void>;
  /** Starts the member again on its data directory and ports (after kill()); resolves once it serves reads. */
  restart(): Promise<void>;
}

export interface EtcdCluster {
  members: EtcdMember[];
  /** Every member's client endpoint, for an agent's `etcd3.hosts`. */
  endpoints: string[];
  /**
   * Member 1 as an EtcdHandle, for LocalCluster's `sharedEtcd` (which reads its endpoint and leaves it
   * running); restarting or pausing one member of a cluster is not offered.
   */
  handle: EtcdHandle;
  /** The member etcd's members agree leads (from /v3/maintenance/status). */
  leader(): Promise<EtcdMember>;
  /** Kills every member and removes the cluster's directory. */
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Starts `members` etcd processes as one new cluster and resolves once every member serves reads. */
export async function startEtcdCluster(options: EtcdClusterOptions = {}): Promise<EtcdCluster> {
  const count = options.members ?? 3;
  const dir = tmpDir('stator-etcd-cluster-');
  const ports: { name: string; client: number; peer: number }[] = [];
  for (let i = 1; i <= count; i++) ports.push({ name: `etcd${i}`, client: await freePort(), peer: await freePort() });
  const initialCluster = ports.map((p) => `${p.name}=http://127.0.0.1:${p.peer}`).join(',');
  const timeouts = options.productionTimeouts ? [] : ['--heartbeat-interval=50', '--election-timeout=500'];
  const children: ChildProcess[] = [];
  const spawnMember = (p: (typeof ports)[number], i: number): ChildProcess => {
    const memberDir = join(dir, p.name);
    mkdirSync(memberDir, { recursive: true });
    const log = openSync(join(memberDir, 'etcd.log'), 'a');
    // On a restart etcd finds its data directory and ignores the --initial-* flags.
    const child = spawn(
      ETCD_BINARY,
      [
        `--name=${p.name}`,
        `--data-dir=${join(memberDir, 'data')}`,
        `--listen-client-urls=http://127.0.0.1:${p.client}`,
        `--advertise-client-urls=http://127.0.0.1:${p.client}`,
        `--listen-peer-urls=http://127.0.0.1:${p.peer}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${p.peer}`,
        `--initial-cluster=${initialCluster}`,
        '--initial-cluster-state=new',
        `--initial-cluster-token=${dir}`,
        ...timeouts,
        '--pre-vote',
        '--log-level=warn',
      ],
      { stdio: ['ignore', log, log] },
    );
    closeSync(log);
    if (options.niceness !== undefined && child.pid) setPriority(child.pid, options.niceness);
    running.add(child);
    children[i] = child;
    child.once('exit', () => running.delete(child));
    return child;
  };
  const servingReads = (m: EtcdMember, i: number) =>
    Promise.race([
      waitFor(readinessProbe(m.endpoint, undefined).probe, {
        timeoutMs: 20_000,
        description: `etcd member ${m.name} serving reads on ${m.endpoint}`,
      }),
      new Promise<never>((_resolve, reject) =>
        children[i].once('exit', (code, signal) =>
          reject(
            new Error(
              `etcd member ${m.name} exited (${code ?? signal}) during start; see ${join(dir, m.name, 'etcd.log')}`,
            ),
          ),
        ),
      ),
    ]);
  const members: EtcdMember[] = ports.map((p, i) => {
    spawnMember(p, i);
    const member: EtcdMember = {
      name: p.name,
      endpoint: `127.0.0.1:${p.client}`,
      clientPort: p.client,
      get pid() {
        return children[i].pid!;
      },
      async kill() {
        const child = children[i];
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        process.kill(child.pid!, 'SIGKILL');
        await exited;
      },
      async restart() {
        const child = children[i];
        if (child.exitCode === null && child.signalCode === null)
          throw new Error(`etcd member ${p.name} is running: kill it before restarting it`);
        spawnMember(p, i);
        await servingReads(member, i);
      },
    };
    return member;
  });
  const stop = async () => {
    await Promise.all(members.map((m) => m.kill()));
    removeDir(dir);
  };
  try {
    // A member serves linearizable reads only once a quorum has elected a leader: all are started before any is awaited.
    await Promise.all(members.map((m, i) => servingReads(m, i)));
  } catch (error) {
    await stop();
    throw error;
  }
  const first = members[0];
  const handle: EtcdHandle = {
    endpoint: first.endpoint,
    clientPort: first.clientPort,
    peerPort: ports[0].peer,
    dataDir: join(dir, first.name, 'data'),
    get pid() {
      return first.pid;
    },
    stop,
    pause: () => freezeProcess(first.pid),
    resume: () => process.kill(first.pid, 'SIGCONT'),
    restart: () => Promise.reject(new Error('restarting one member of an etcd cluster is not offered')),
  };
  return {
    members,
    endpoints: members.map((m) => m.endpoint),
    handle,
    leader: () => leaderOf(members),
    stop,
  };
}

/** The member whose id the members report as leader. */
async function leaderOf(members: EtcdMember[]): Promise<EtcdMember> {
  const statuses = await Promise.all(
    members.map(async (member) => {
      try {
        const response = await fetch(`http://${member.endpoint}/v3/maintenance/status`, {
          method: 'POST',
          body: '{}',
          signal: AbortSignal.timeout(1000),
        });
        const status = (await response.json()) as { header?: { member_id?: string }; leader?: string };
        return { member, id: status.header?.member_id, leader: status.leader };
      } catch {
        return { member, id: undefined, leader: undefined };
      }
    }),
  );
  const leaderId = statuses.find((s) => s.leader)?.leader;
  const leader = statuses.find((s) => s.id !== undefined && s.id === leaderId);
  if (!leader) throw new Error(`no etcd member reports a leader among ${members.map((m) => m.name).join(', ')}`);
  return leader.member;
}
