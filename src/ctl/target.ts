import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { parseDocument } from 'yaml';
import { Findings, Mapping } from '../config/config-readers';
import { isMapping } from '../config/config-values';
import { readCtlSection } from '../config/ctl-config';
import { readDcs } from '../config/etcd-config';
import { DEFAULT_NAMESPACE } from '../config/load-config';
import { systemClock } from '../common/clock';
import { EtcdDcs } from '../dcs/etcd-dcs';
import { withSrvEndpoints } from '../dcs/etcd/etcd-srv-discovery';
import { credentialsOf, UsageError, Values } from './args';
import { ApiClient, Connection, UnreachableError } from './client';

/** Where the cluster is reached: the API URLs to try in order, and how to connect. */
export interface Target {
  urls: string[];
  connection: Connection;
  /** In words, for errors: `--api http://...` or `stator.yml (etcd 127.0.0.1:2379, scope demo)`. */
  description: string;
}

/** The environment variables statorctl reads when the flag is absent. */
export const ENV = { api: 'STATORCTL_API', config: 'STATORCTL_CONFIG', auth: 'STATORCTL_AUTH' } as const;

/**
 * `--api URL` (or STATORCTL_API), or `-c FILE` (or STATORCTL_CONFIG) in Patroni's schema. With a file,
 * as patronictl does, the member list is read from etcd (`etcd3`, `namespace`, `scope`) and every
 * member's `api_url` is tried, the leader first; when etcd cannot be read, the file's own
 * `restapi.connect_address`. Credentials: `--auth`, else `ctl.authentication`, else `restapi.authentication`;
 * TLS: `--cacert/--cert/--key/--insecure`, else `ctl.cacert/certfile/keyfile/keyfile_password/insecure`, else `restapi.cafile`.
 * @throws UsageError when neither is given or the file cannot be used.
 */
export async function resolveTarget(values: Values, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Target> {
  const api = values.api ?? (values.config === undefined ? env[ENV.api] : undefined);
  const configPath = values.config ?? (api === undefined ? env[ENV.config] : undefined);
  if (api !== undefined && values.config !== undefined) throw new UsageError('--api and -c/--config: give one of them');
  if (api === undefined && configPath === undefined) {
    throw new UsageError(
      `how to reach the cluster: --api URL of any member, or -c stator.yml (or ${ENV.api} / ${ENV.config})`,
    );
  }
  const auth = values.auth ?? env[ENV.auth];
  if (api !== undefined) {
    const url = apiBase(api);
    const connection: Connection = {
      timeoutMs,
      ...tlsFromFlags(values),
      ...(auth ? { auth: credentialsOf(auth) } : {}),
    };
    return { urls: [url], connection, description: `--api ${url}` };
  }
  return targetOfFile(configPath!, values, auth, timeoutMs);
}

/** `http://host:8008`, `http://host:8008/stator`, `host:8008` → the base URL without path. */
export function apiBase(value: string): string {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new UsageError(`--api: not a URL: '${value}'`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError(`--api: http or https only, got '${value}'`);
  return `${url.protocol}//${url.host}`;
}

/** The base URL of a member's `api_url` (`http://h:p/stator` → `http://h:p`). */
export function memberBase(apiUrl: string): string {
  const url = new URL(apiUrl);
  return `${url.protocol}//${url.host}`;
}

/** `/stator` or `/patroni`: the status path of a member, from its `api_url`. */
export function statusPath(apiUrl: string | undefined): string {
  if (!apiUrl) return '/stator';
  const path = new URL(apiUrl).pathname.replace(/\/+$/, '');
  return path === '' ? '/stator' : path;
}

function tlsFromFlags(values: Values): Partial<Connection> {
  return {
    ...(values.cacert ? { ca: readPem('--cacert', values.cacert) } : {}),
    ...(values.cert ? { cert: readPem('--cert', values.cert) } : {}),
    ...(values.key ? { key: readPem('--key', values.key) } : {}),
    ...(values.insecure ? { insecure: true } : {}),
  };
}

async function targetOfFile(
  path: string,
  values: Values,
  auth: string | undefined,
  timeoutMs: number,
): Promise<Target> {
  const doc = readYaml(path);
  const ctlFindings = new Findings();
  const ctl = readCtlSection(ctlFindings, doc.ctl);
  if (ctlFindings.problems.length > 0) throw new UsageError(`${path}: ${ctlFindings.problems.join('; ')}`);
  const restapi = section(doc, 'restapi');
  const scope = typeof doc.scope === 'string' ? doc.scope : undefined;
  if (!scope) throw new UsageError(`${path}: scope: required`);
  const credentials = auth ? credentialsOf(auth) : (ctl.authentication ?? credentialsIn(restapi.authentication));
  const file = (key: string, name: unknown) =>
    typeof name === 'string' && name ? readPem(`${path}: ${key}`, name) : undefined;
  const connection: Connection = {
    timeoutMs,
    ...(credentials ? { auth: credentials } : {}),
    ...definedOnly({
      ca: file('ctl.cacert', ctl.cacert) ?? file('restapi.cafile', restapi.cafile),
      // As patronictl: the key only goes with a certificate.
      cert: file('ctl.certfile', ctl.certfile),
      key: ctl.certfile ? file('ctl.keyfile', ctl.keyfile) : undefined,
      passphrase: ctl.certfile ? ctl.keyfile_password : undefined,
      insecure: ctl.insecure === true ? true : undefined,
    }),
    ...tlsFromFlags(values),
  };
  checkClientKey(values.cert || values.key ? '--key' : `${path}: ctl.keyfile`, connection);
  const findings = new Findings();
  const etcd3 = readDcs(findings, doc);
  const namespace = typeof doc.namespace === 'string' ? doc.namespace : DEFAULT_NAMESPACE;
  const urls: string[] = [];
  let etcdNote = '';
  if (findings.problems.length === 0 && (etcd3.hosts.length > 0 || etcd3.srv)) {
    try {
      // etcd3.srv: as the agent finds etcd; a fallback to hosts is no news to a statorctl user.
      const found = await withSrvEndpoints(etcd3, { info: () => undefined, warning: () => undefined });
      Object.assign(etcd3, found);
      urls.push(...(await memberUrlsFromEtcd(etcd3, namespace.replace(/\/+$/, '') || '', scope, timeoutMs)));
    } catch (error) {
      etcdNote = `; etcd: ${(error as Error).message}`;
    }
  }
  const connectAddress = typeof restapi.connect_address === 'string' ? restapi.connect_address : undefined;
  if (connectAddress) urls.push(`${restapi.certfile ? 'https' : 'http'}://${connectAddress}`);
  if (urls.length === 0)
    throw new UsageError(
      `${path}: no member to reach: no member keys in etcd and no restapi.connect_address${etcdNote}`,
    );
  return {
    urls: [...new Set(urls)],
    connection,
    description: `${path} (scope ${scope}${etcd3.hosts.length ? `, etcd ${etcd3.hosts.join(',')}` : ''})`,
  };
}

/** The members' API base URLs as their keys in etcd tell, the leader first. */
async function memberUrlsFromEtcd(
  etcd3: ReturnType<typeof readDcs>,
  namespace: string,
  scope: string,
  timeoutMs: number,
): Promise<string[]> {
  const dcs = new EtcdDcs({
    ...etcd3,
    namespace,
    scope,
    name: 'statorctl',
    ttlSeconds: 30,
    retryTimeoutMs: Math.min(timeoutMs, 5000),
    clock: systemClock,
  });
  try {
    const view = await dcs.read();
    const leader = view.leader?.value;
    const members = [...view.members].sort((a, b) => Number(b.name === leader) - Number(a.name === leader));
    return members
      .map((member) => member.data.api_url)
      .filter((url): url is string => typeof url === 'string' && url !== '')
      .map(memberBase);
  } finally {
    await dcs.close().catch(() => undefined);
  }
}

/**
 * The first of the target's URLs whose node answers `GET /cluster`; its client is used for the command.
 * @throws UnreachableError listing every URL tried and why.
 */
export async function connect(target: Target): Promise<ApiClient> {
  const failures: string[] = [];
  for (const url of target.urls) {
    const client = new ApiClient(url, target.connection);
    try {
      const answer = await client.send('GET', '/cluster');
      if (answer.status === 200) return client;
      failures.push(`${url}/cluster: HTTP ${answer.status}`);
    } catch (error) {
      failures.push((error as Error).message);
    }
    await client.close();
  }
  throw new UnreachableError(`no member of ${target.description} answers: ${failures.join('; ')}`);
}

function readYaml(path: string): Mapping {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UsageError(
      `-c: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
  const document = parseDocument(text, { version: '1.1' });
  if (document.errors.length > 0) throw new UsageError(`${path}: ${document.errors[0].message.split('\n')[0]}`);
  const content: unknown = document.toJS();
  if (!isMapping(content)) throw new UsageError(`${path}: the configuration must be a mapping`);
  return content;
}

function section(doc: Mapping, key: string): Mapping {
  const value = doc[key];
  return isMapping(value) ? value : {};
}

function credentialsIn(value: unknown): { username: string; password: string } | undefined {
  if (!isMapping(value) || typeof value.username !== 'string') return undefined;
  return { username: value.username, password: String(value.password ?? '') };
}

function readPem(what: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new UsageError(
      `${what}: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
}

/** An encrypted key without, or with a wrong, `ctl.keyfile_password` is said before any connection, naming the key. */
function checkClientKey(source: string, connection: Connection): void {
  if (!connection.cert) return;
  try {
    createSecureContext({
      cert: connection.cert,
      key: connection.key ?? connection.cert,
      ...(connection.passphrase !== undefined ? { passphrase: connection.passphrase } : {}),
    });
  } catch (error) {
    const hint =
      connection.passphrase === undefined
        ? 'is it encrypted? set ctl.keyfile_password'
        : 'is ctl.keyfile_password right?';
    throw new UsageError(
      `${source}: cannot load the client certificate's private key (${(error as Error).message}); ${hint}`,
    );
  }
}

function definedOnly<T extends Record<string, unknown>>(object: T): Partial<T> {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined)) as Partial<T>;
}
