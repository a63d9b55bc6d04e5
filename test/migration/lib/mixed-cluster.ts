import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { EtcdHandle, startEtcd } from '../../../scripts/lib/etcd';
import { freePort } from '../../../scripts/lib/ports';
import { waitFor } from '../../../scripts/lib/wait-for';
import { MixedNode, openBaseDir } from './mixed-node';

const run = promisify(execFile);

/** The timings of the measurements in issue 17: ttl 10, loop_wait 2, retry_timeout 3. */
export const TIMING = { ttl: 10, loopWait: 2, retryTimeout: 3 };

/**
 * Three nodes on one etcd, each run by Patroni or Stator, with patronictl and etcdctl pointed at them.
 * Everything the reference reads is read where it reads it: the DCS keys through etcdctl, the members
 * through patronictl.
 */
export class MixedCluster {
  private constructor(
    readonly etcd: EtcdHandle,
    readonly nodes: MixedNode[],
    readonly scope: string,
    private readonly ctlConfig: string,
  ) {}

  static async start(baseDir: string, scope = 'migration'): Promise<MixedCluster> {
    openBaseDir(baseDir);
    const etcd = await startEtcd();
    const nodes: MixedNode[] = [];
    for (let index = 1; index <= 3; index++) {
      nodes.push(
        new MixedNode({
          index,
          baseDir,
          scope,
          etcdEndpoint: etcd.endpoint,
          apiPort: await freePort(),
          pgPort: await freePort(),
          timing: TIMING,
        }),
      );
    }
    const ctlConfig = join(baseDir, 'patronictl.yml');
    writeFileSync(ctlConfig, `scope: ${scope}\nnamespace: /service\netcd3:\n  hosts: ${etcd.endpoint}\n`);
    return new MixedCluster(etcd, nodes, scope, ctlConfig);
  }

  node(name: string): MixedNode {
    const found = this.nodes.find((node) => node.name === name);
    if (!found) throw new Error(`no node ${name}`);
    return found;
  }

  async stop(): Promise<void> {
    for (const node of this.nodes) {
      await node.stop().catch(() => undefined);
      await node.clearLeftovers().catch(() => undefined);
    }
    await this.etcd.stop();
  }

  async patronictl(...args: string[]): Promise<string> {
    const { stdout } = await run('patronictl', ['-c', this.ctlConfig, ...args], {
      timeout: 60_000,
      env: { ...process.env, LANG: 'C.UTF-8' },
    });
    return stdout;
  }

  /** `patronictl list -f json`: each member's name, role, state and lag, as an operator sees them. */
  async list(): Promise<{ Member: string; Role: string; State: string; 'Lag in MB'?: number | string; TL?: number }[]> {
    return JSON.parse(await this.patronictl('list', '-f', 'json')) as never;
  }

  /** A DCS key under the cluster's prefix, as stored (null when absent). */
  async key(name: string): Promise<string | null> {
    const { stdout } = await run(
      'etcdctl',
      ['--endpoints', this.etcd.endpoint, 'get', `/service/${this.scope}/${name}`, '--print-value-only'],
      {
        env: { ...process.env, ETCDCTL_API: '3' },
        timeout: 10_000,
      },
    );
    const value = stdout.replace(/\n$/, '');
    return stdout === '' ? null : value;
  }

  async jsonKey<T = Record<string, unknown>>(name: string): Promise<T | null> {
    const value = await this.key(name);
    return value ? (JSON.parse(value) as T) : null;
  }

  async putKey(name: string, value: string): Promise<void> {
    await run('etcdctl', ['--endpoints', this.etcd.endpoint, 'put', `/service/${this.scope}/${name}`, value], {
      env: { ...process.env, ETCDCTL_API: '3' },
      timeout: 10_000,
    });
  }

  async leaderName(): Promise<string | null> {
    return this.key('leader').catch(() => null);
  }

  /** The writable lock holder once every other running member streams from it. */
  async waitForHealthy(
    timeoutMs = 60_000,
    description = 'a leader with every other member streaming from it',
  ): Promise<MixedNode> {
    return waitFor(
      async () => {
        const name = await this.leaderName();
        if (!name) return null;
        const leader = this.node(name);
        if (!(await leader.writable())) return null;
        const streaming = await leader.streamingReplicas();
        const others = this.nodes.filter((node) => node !== leader && node.agentPid());
        return others.every((node) => streaming.includes(node.name)) ? leader : null;
      },
      { timeoutMs, intervalMs: 100, description },
    );
  }

  /** Milliseconds from `since` until `node` streams from the leader `leader`. */
  async waitUntilStreaming(node: MixedNode, leader: MixedNode, since: number, timeoutMs = 60_000): Promise<number> {
    await waitFor(async () => (await leader.streamingReplicas()).includes(node.name), {
      timeoutMs,
      intervalMs: 50,
      description: `${node.name} streaming from ${leader.name}`,
    });
    return performance.now() - since;
  }

  replicasOf(leader: MixedNode): MixedNode[] {
    return this.nodes.filter((node) => node !== leader);
  }
}
