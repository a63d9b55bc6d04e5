import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalCluster } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { EtcdClient } from '../../src/dcs/etcd/etcd-client';
import { dnsResolver, srvRediscovery, withSrvEndpoints } from '../../src/dcs/etcd/etcd-srv-discovery';
import { DnsServerHandle, DnsZone, startDnsServer } from '../helpers/dns-server';
import { EtcdHandle, startEtcd } from '../helpers/etcd';
import { freePort } from '../helpers/ports';
import { waitFor } from '../helpers/wait-for';

jest.setTimeout(30_000);

const TIMEOUT_MS = 2000;

/** etcd3.srv through real DNS over UDP: a DNS server on a loopback port names a real etcd in SRV records. */
describe('etcd3.srv against a DNS server and etcd', () => {
  let etcd: EtcdHandle;
  let dns: DnsServerHandle;
  let zone: DnsZone;
  const lines: string[] = [];
  const log = {
    info: (line: string) => lines.push(`INFO ${line}`),
    warning: (line: string) => lines.push(`WARNING ${line}`),
  };

  beforeAll(async () => {
    etcd = await startEtcd();
    zone = {
      srv: {
        // Peer records come later in Patroni's order and are never read; a wrong port there would show.
        '_etcd-client-prod._tcp.stator.test': [`localhost:${etcd.clientPort}`],
        '_etcd-server-prod._tcp.stator.test': [`localhost:${etcd.peerPort}`],
      },
    };
    dns = await startDnsServer(zone);
  });
  afterAll(async () => {
    await dns?.close();
    await etcd?.stop();
  });
  beforeEach(() => lines.splice(0));

  it('finds etcd through the client SRV records, then writes and reads through it', async () => {
    const etcd3 = await withSrvEndpoints(
      { hosts: [], protocol: 'http' as const, srv: 'stator.test', srvSuffix: 'prod' },
      log,
      {
        resolver: dnsResolver(TIMEOUT_MS, [dns.address]),
        timeoutMs: TIMEOUT_MS,
      },
    );
    expect(etcd3.hosts).toEqual([`localhost:${etcd.clientPort}`]);
    expect(dns.questions).toEqual([
      'SRV _etcd-client-ssl-prod._tcp.stator.test',
      'SRV _etcd-client-prod._tcp.stator.test',
    ]);
    expect(lines).toEqual([
      `INFO etcd3.srv: _etcd-client-prod._tcp.stator.test names etcd at http://localhost:${etcd.clientPort}`,
    ]);

    const viaSrv = new EtcdClient(etcd3);
    const direct = new EtcdClient({ hosts: [etcd.endpoint] });
    try {
      await viaSrv.put('/service/srv-test/probe', 'found by SRV', {}, TIMEOUT_MS);
      const read = await direct.range('/service/srv-test/probe', {}, TIMEOUT_MS);
      expect(read.kvs.map((kv) => kv.value)).toEqual(['found by SRV']);
    } finally {
      viaSrv.close();
      direct.close();
    }
  });

  it('falls back to etcd3.hosts, with one warning, when the domain has no client records', async () => {
    const etcd3 = await withSrvEndpoints(
      { hosts: [etcd.endpoint], protocol: 'http' as const, srv: 'stator.test' },
      log,
      {
        resolver: dnsResolver(TIMEOUT_MS, [dns.address]),
        timeoutMs: TIMEOUT_MS,
      },
    );
    expect(etcd3.hosts).toEqual([etcd.endpoint]);
    expect(lines).toEqual([
      `WARNING etcd3.srv: no etcd client SRV record for stator.test (tried _etcd-client-ssl._tcp.stator.test, _etcd-client._tcp.stator.test, _etcd-ssl._tcp.stator.test, _etcd._tcp.stator.test); using http://${etcd.endpoint}`,
    ]);
  });

  it('gives up on a DNS server that never answers within its deadline, and says so', async () => {
    const silent = await startDnsServer({ srv: {} }, { silent: true });
    const started = Date.now();
    try {
      await expect(
        withSrvEndpoints({ hosts: [], protocol: 'http' as const, srv: 'stator.test' }, log, {
          resolver: dnsResolver(300, [silent.address]),
          timeoutMs: 300,
        }),
      ).rejects.toThrow(
        /^etcd3\.srv: no etcd client SRV record for stator\.test .*_etcd-client-ssl\._tcp\.stator\.test: .*and no etcd3\.hosts, host or url to fall back on$/,
      );
      // Four questions, each at most 300 ms, and slack for a loaded machine.
      expect(Date.now() - started).toBeLessThan(4 * 300 + 2000);
      expect(silent.questions).toContain('SRV _etcd._tcp.stator.test');
    } finally {
      await silent.close();
    }
  });

  it('asks DNS again when every etcd host failed, and carries on with the hosts it names now', async () => {
    const options = { resolver: dnsResolver(TIMEOUT_MS, [dns.address]), timeoutMs: TIMEOUT_MS };
    // etcd was announced on a port where nothing listens now (it moved while the agent ran).
    const deadPort = await freePort();
    zone.srv['_etcd-client._tcp.moved.test'] = [`localhost:${deadPort}`];
    const etcd3 = await withSrvEndpoints({ hosts: [], protocol: 'http' as const, srv: 'moved.test' }, log, options);
    zone.srv['_etcd-client._tcp.moved.test'] = [`localhost:${etcd.clientPort}`];
    const client = new EtcdClient({ ...etcd3, rediscoverHosts: srvRediscovery(etcd3, log, options) });
    try {
      await expect(client.put('/service/srv-test/moved', 'first', {}, TIMEOUT_MS)).rejects.toThrow(
        `no etcd host reachable (http://localhost:${deadPort})`,
      );
      await waitFor(() => client.put('/service/srv-test/moved', 'after DNS again', {}, TIMEOUT_MS), {
        timeoutMs: 10_000,
        description: 'a put through the hosts SRV names now',
      });
      const read = await client.range('/service/srv-test/moved', {}, TIMEOUT_MS);
      expect(read.kvs.map((kv) => kv.value)).toEqual(['after DNS again']);
      expect(lines).toContain(
        `INFO etcd3.srv: every etcd host failed; _etcd-client._tcp.moved.test names etcd at http://localhost:${etcd.clientPort}`,
      );
    } finally {
      client.close();
    }
  });

  it('starts an agent whose etcd3 section is only srv: it finds etcd through DNS and becomes the leader', async () => {
    const baseDir = tmpDir('stator-srv-agent-');
    // The agent asks the system resolver, as Patroni does: it runs in a mount namespace whose /etc/resolv.conf names this DNS server.
    const resolvConf = join(baseDir, 'resolv.conf');
    writeFileSync(resolvConf, `nameserver ${dns.address}\n`);
    let cluster: LocalCluster | undefined;
    let clusterEtcdPort = 0;
    try {
      cluster = await LocalCluster.start({
        nodes: 1,
        baseDir,
        ttl: 10,
        loopWait: 2,
        retryTimeout: 3,
        prepareEtcd: (clusterEtcd) => {
          clusterEtcdPort = clusterEtcd.clientPort;
          zone.srv['_etcd-client._tcp.agent.test'] = [`localhost:${clusterEtcd.clientPort}`];
        },
        sections: { etcd3: { srv: 'agent.test' } },
        agentPrefix: ['unshare', '--mount', 'sh', '-c', 'mount --bind "$0" /etc/resolv.conf && exec "$@"', resolvConf],
      });
      const leader = await cluster.waitForLeader(60_000);
      expect(leader.name).toBe('node1');
      expect(readFileSync(leader.logPath, 'utf8')).toContain(
        `INFO: etcd3.srv: _etcd-client._tcp.agent.test names etcd at http://localhost:${clusterEtcdPort}`,
      );
      expect(dns.questions).toContain('SRV _etcd-client._tcp.agent.test');
      const direct = new EtcdClient({ hosts: [cluster.etcd.endpoint] });
      try {
        const read = await direct.range(`/service/${cluster.scope}/leader`, {}, TIMEOUT_MS);
        expect(read.kvs.map((kv) => kv.value)).toEqual(['node1']);
      } finally {
        direct.close();
      }
    } finally {
      await cluster?.stop();
      if (!process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
    }
  }, 90_000);
});
