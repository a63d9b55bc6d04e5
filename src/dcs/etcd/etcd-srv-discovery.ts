import { Resolver } from 'node:dns/promises';

/** The one DNS question discovery asks; node:dns's Resolver answers it, a test can give its own. */
export interface SrvResolver {
  resolveSrv(name: string): Promise<Array<{ name: string; port: number; priority?: number; weight?: number }>>;
}

/** What `etcd3.srv` found: the etcd client endpoints and their protocol, and the record that named them. */
export interface SrvDiscovery {
  hosts: string[];
  protocol: 'http' | 'https';
  record: string;
}

/**
 * The client record kinds in Patroni's order: `-ssl` means https. Patroni then tries `-server-ssl`
 * and `-server` (peer records) and asks each peer's `/members` for client URLs; Stator does not:
 * that call goes to etcd's peer port with certificate checks off, so whoever answers there would
 * name the DCS. etcd's own clients (etcdctl --discovery-srv, etcd gateway) read client records too.
 */
export const CLIENT_RECORD_KINDS = ['-client-ssl', '-client', '-ssl', ''] as const;

/** Each DNS question gets this long at most: a silent DNS server must not hold the agent's start. */
export const DEFAULT_SRV_TIMEOUT_MS = 3000;

/** The SRV names tried for `srv` (and `srv_suffix`), in order, with the protocol each implies. */
export function srvRecordNames(srv: string, suffix?: string): Array<{ name: string; protocol: 'http' | 'https' }> {
  return CLIENT_RECORD_KINDS.map((kind) => {
    const withSuffix = suffix ? `${kind}-${suffix}` : kind;
    return { name: `_etcd${withSuffix}._tcp.${srv}`, protocol: kind.includes('-ssl') ? 'https' : 'http' };
  });
}

/** A resolver of node:dns that gives up after `timeoutMs` per question (one try per server). */
export function dnsResolver(timeoutMs = DEFAULT_SRV_TIMEOUT_MS, servers?: string[]): SrvResolver {
  const resolver = new Resolver({ timeout: timeoutMs, tries: 1 });
  if (servers) resolver.setServers(servers);
  return resolver;
}

/**
 * The first record kind that names any host wins, as in Patroni. Undefined when none does; every
 * question has a deadline (`timeoutMs`) whatever the resolver does, and a failed one counts as no
 * record. `onFailure` hears each question that failed other than by "no such record".
 */
export async function discoverEtcdBySrv(
  srv: string,
  suffix: string | undefined,
  options: { resolver?: SrvResolver; timeoutMs?: number; onFailure?: (name: string, reason: string) => void } = {},
): Promise<SrvDiscovery | undefined> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_SRV_TIMEOUT_MS;
  const resolver = options.resolver ?? dnsResolver(timeoutMs);
  for (const { name, protocol } of srvRecordNames(srv, suffix)) {
    let records;
    try {
      records = await withDeadline(resolver.resolveSrv(name), timeoutMs, name);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOTFOUND' && code !== 'ENODATA') options.onFailure?.(name, (error as Error).message);
      continue;
    }
    const hosts = [...new Set(records.map((record) => `${hostOf(record.name)}:${record.port}`))];
    if (hosts.length > 0) return { hosts, protocol, record: name };
  }
  return undefined;
}

/** A target as `host`, an IPv6 literal in brackets; DNS answers carry no trailing dot in Node. */
function hostOf(target: string): string {
  const host = target.replace(/\.$/, '');
  return host.includes(':') ? `[${host}]` : host;
}

function withDeadline<T>(promise: Promise<T>, timeoutMs: number, name: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(Object.assign(new Error(`no answer for ${name} within ${timeoutMs} ms`), { code: 'ETIMEOUT' })),
      timeoutMs,
    );
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** The `etcd3` settings discovery reads and fills in. */
export interface SrvConfigured {
  hosts: string[];
  protocol: 'http' | 'https';
  srv?: string;
  srvSuffix?: string;
}

/**
 * The endpoints to use: those `etcd3.srv` names, else the configured `hosts`/`host`/`url` (Patroni's
 * fallback), with one log line saying which and why. Throws, naming the key, when neither gives a host.
 */
export async function withSrvEndpoints<T extends SrvConfigured>(
  etcd3: T,
  log: { info(message: string): void; warning(message: string): void },
  options: { resolver?: SrvResolver; timeoutMs?: number } = {},
): Promise<T> {
  if (!etcd3.srv) return etcd3;
  const failures: string[] = [];
  const found = await discoverEtcdBySrv(etcd3.srv, etcd3.srvSuffix, {
    ...options,
    onFailure: (name, reason) => failures.push(`${name}: ${reason}`),
  });
  const tried = srvRecordNames(etcd3.srv, etcd3.srvSuffix)
    .map((record) => record.name)
    .join(', ');
  const why = failures.length > 0 ? ` (${failures.join('; ')})` : '';
  if (found) {
    log.info(`etcd3.srv: ${found.record} names etcd at ${found.protocol}://${found.hosts.join(',')}`);
    return { ...etcd3, hosts: found.hosts, protocol: found.protocol };
  }
  if (etcd3.hosts.length > 0) {
    log.warning(
      `etcd3.srv: no etcd client SRV record for ${etcd3.srv} (tried ${tried})${why}; using ${etcd3.protocol}://${etcd3.hosts.join(',')}`,
    );
    return etcd3;
  }
  throw new Error(
    `etcd3.srv: no etcd client SRV record for ${etcd3.srv} (tried ${tried})${why}, and no etcd3.hosts, host or url to fall back on`,
  );
}

/**
 * For `etcd3.srv`: what the etcd transport asks when every host failed (Patroni then resolves the
 * SRV records again). Hosts of the protocol chosen at start, or undefined to keep the current ones;
 * one log line either way. Undefined without `srv`.
 */
export function srvRediscovery(
  etcd3: SrvConfigured,
  log: { info(message: string): void; warning(message: string): void },
  options: { resolver?: SrvResolver; timeoutMs?: number } = {},
): (() => Promise<string[] | undefined>) | undefined {
  const { srv, srvSuffix } = etcd3;
  if (!srv) return undefined;
  return async () => {
    const failures: string[] = [];
    const found = await discoverEtcdBySrv(srv, srvSuffix, {
      ...options,
      onFailure: (name, reason) => failures.push(`${name}: ${reason}`),
    });
    if (!found) {
      log.warning(
        `etcd3.srv: every etcd host failed and no etcd client SRV record for ${srv} answers${failures.length ? ` (${failures.join('; ')})` : ''}; keeping the hosts it has`,
      );
      return undefined;
    }
    if (found.protocol !== etcd3.protocol) {
      log.warning(
        `etcd3.srv: every etcd host failed; ${found.record} now names ${found.protocol} endpoints, but the protocol is chosen at start (${etcd3.protocol}): restart the agent`,
      );
      return undefined;
    }
    log.info(
      `etcd3.srv: every etcd host failed; ${found.record} names etcd at ${found.protocol}://${found.hosts.join(',')}`,
    );
    return found.hosts;
  };
}
