import { discoverEtcdBySrv, SrvResolver, withSrvEndpoints } from '../../src/dcs/etcd/etcd-srv-discovery';
import { problemsOf } from '../helpers/config-problems';
import { etcd3ConfigLoader } from '../helpers/etcd3-config';

const load = etcd3ConfigLoader();

/** A DNS zone as a map of SRV name -> targets; other names are NXDOMAIN; the questions asked are recorded. */
function zone(records: Record<string, string[]>): SrvResolver & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    resolveSrv: async (name: string) => {
      asked.push(name);
      const targets = records[name];
      if (!targets) throw Object.assign(new Error(`queryetcd ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
      return targets.map((target) => {
        const [host, port] = target.split(':');
        return { name: host, port: Number(port), priority: 0, weight: 0 };
      });
    },
  };
}

const lines: string[] = [];
const log = {
  info: (line: string) => lines.push(`INFO ${line}`),
  warning: (line: string) => lines.push(`WARNING ${line}`),
};
beforeEach(() => lines.splice(0));

describe('etcd3.srv discovery', () => {
  it('asks for the client records in Patroni order, with the suffix, and never for peer records', async () => {
    const dns = zone({});
    expect(await discoverEtcdBySrv('example.com', 'prod', { resolver: dns })).toBeUndefined();
    expect(dns.asked).toEqual([
      '_etcd-client-ssl-prod._tcp.example.com',
      '_etcd-client-prod._tcp.example.com',
      '_etcd-ssl-prod._tcp.example.com',
      '_etcd-prod._tcp.example.com',
    ]);
  });

  it('takes the first kind that names a host; -ssl records mean https', async () => {
    const dns = zone({
      '_etcd-client._tcp.example.com': ['e1.example.com.:2379', 'e2.example.com:2379', 'e1.example.com:2379'],
      '_etcd-ssl._tcp.example.com': ['tls.example.com:2379'],
      '_etcd._tcp.example.com': ['old.example.com:4001'],
    });
    expect(await discoverEtcdBySrv('example.com', undefined, { resolver: dns })).toEqual({
      hosts: ['e1.example.com:2379', 'e2.example.com:2379'],
      protocol: 'http',
      record: '_etcd-client._tcp.example.com',
    });
    expect(dns.asked).toEqual(['_etcd-client-ssl._tcp.example.com', '_etcd-client._tcp.example.com']);
    const tls = await discoverEtcdBySrv('example.com', undefined, {
      resolver: zone({ '_etcd-ssl._tcp.example.com': ['tls.example.com:2379'] }),
    });
    expect(tls).toMatchObject({ hosts: ['tls.example.com:2379'], protocol: 'https' });
  });

  it('gives up on a silent DNS server at the deadline, says so, and falls back to the configured hosts', async () => {
    const silent: SrvResolver = { resolveSrv: () => new Promise(() => undefined) };
    const started = Date.now();
    const etcd3 = await withSrvEndpoints(
      { hosts: ['fallback:2379'], protocol: 'http' as const, srv: 'example.com' },
      log,
      { resolver: silent, timeoutMs: 50 },
    );
    expect(Date.now() - started).toBeLessThan(2000);
    expect(etcd3.hosts).toEqual(['fallback:2379']);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(
      'WARNING etcd3.srv: no etcd client SRV record for example.com (tried _etcd-client-ssl._tcp.example.com,',
    );
    expect(lines[0]).toContain(
      '_etcd-client-ssl._tcp.example.com: no answer for _etcd-client-ssl._tcp.example.com within 50 ms',
    );
    expect(lines[0]).toContain('; using http://fallback:2379');
  });

  it('uses what the records name, and says which record named it', async () => {
    const dns = zone({ '_etcd-client-ssl._tcp.example.com': ['e1.example.com:2379'] });
    const etcd3 = await withSrvEndpoints(
      { hosts: ['fallback:2379'], protocol: 'http' as const, srv: 'example.com', cacert: '/ca.pem' },
      log,
      { resolver: dns },
    );
    expect(etcd3).toEqual({ hosts: ['e1.example.com:2379'], protocol: 'https', srv: 'example.com', cacert: '/ca.pem' });
    expect(lines).toEqual([
      'INFO etcd3.srv: _etcd-client-ssl._tcp.example.com names etcd at https://e1.example.com:2379',
    ]);
  });

  it('refuses to start with neither records nor a fallback, naming the key', async () => {
    await expect(
      withSrvEndpoints({ hosts: [], protocol: 'http' as const, srv: 'example.com', srvSuffix: 'a' }, log, {
        resolver: zone({}),
      }),
    ).rejects.toThrow(
      'etcd3.srv: no etcd client SRV record for example.com (tried _etcd-client-ssl-a._tcp.example.com, _etcd-client-a._tcp.example.com, _etcd-ssl-a._tcp.example.com, _etcd-a._tcp.example.com), and no etcd3.hosts, host or url to fall back on',
    );
  });
});

describe('etcd3.srv and srv_suffix in the configuration', () => {
  it('reads them from the file and from PATRONI_ETCD3_SRV / PATRONI_ETCD3_SRV_SUFFIX; hosts are then optional', () => {
    expect(load({ srv: 'example.com.', srv_suffix: 'prod' })).toMatchObject({
      config: { etcd3: { hosts: [], protocol: 'http', srv: 'example.com', srvSuffix: 'prod' } },
      warnings: [],
    });
    const fromEnv = load({}, { PATRONI_ETCD3_SRV: 'example.com', PATRONI_ETCD3_SRV_SUFFIX: 'b' });
    expect(fromEnv.config.etcd3).toEqual({ hosts: [], protocol: 'http', srv: 'example.com', srvSuffix: 'b' });
  });

  it('keeps hosts and url as the fallback, and lets proxy win, as Patroni does', () => {
    expect(load({ srv: 'example.com', hosts: ['h1:2379'] }).config.etcd3).toEqual({
      hosts: ['h1:2379'],
      protocol: 'http',
      srv: 'example.com',
    });
    expect(load({ srv: 'example.com', url: 'https://u:2379' }).config.etcd3).toEqual({
      hosts: ['u:2379'],
      protocol: 'https',
      srv: 'example.com',
    });
    const proxied = load({ srv: 'example.com', proxy: 'http://p:23790' });
    expect(proxied.config.etcd3).toEqual({ hosts: ['p:23790'], protocol: 'http' });
    expect(proxied.warnings).toEqual(['etcd3.srv ignored: etcd3.proxy is set and wins']);
    expect(load({ hosts: ['h1:2379'], srv_suffix: 'x' }).warnings).toEqual([
      'etcd3.srv_suffix ignored: etcd3.srv is not set',
    ]);
  });

  it('refuses what cannot be a domain or a suffix, and changes nothing', () => {
    expect(problemsOf(() => load({ srv: 'http://example.com', srv_suffix: 'a.b' }))).toEqual([
      'etcd3.srv: must be a DNS domain such as example.com (its _etcd-client._tcp SRV records name etcd), got "http://example.com"',
      'etcd3.srv_suffix: must be letters, digits, - or _ (as etcd\'s --discovery-srv-name), got "a.b"',
    ]);
  });
});
