import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { request, RequestOptions } from 'node:https';
import { join } from 'node:path';
import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';
import { enableEtcdAuth } from '../helpers/etcd-auth';
import { sql } from '../helpers/sql';
import { makeTestCertificates, TestCertificates } from '../helpers/test-certificates';
import { WatchdogFifo } from '../helpers/watchdog-fifo';

/**
 * A node started from a patroni.yml written as a Patroni 4.1 user writes one for production, each setting checked
 * where that user would look: the files PostgreSQL reads and `SHOW`, the API's TLS handshake, the JSON log line, the
 * watchdog device. etcd runs over TLS with client certificates and a user whose tokens expire every 2 s.
 */
jest.setTimeout(120_000);

const SCOPE = 'prod';
const ALLOWED_CIPHER = 'ECDHE-ECDSA-AES256-GCM-SHA384';
const OTHER_CIPHER = 'ECDHE-ECDSA-AES128-GCM-SHA256';
const user = {
  name: 'stator',
  password: 'stator-s3cret',
  prefixes: [`/service/${SCOPE}/`, `/stator-events/${SCOPE}/`],
};

let certificatesDir: string;
let baseDir: string;
let certificates: TestCertificates;
let fifo: WatchdogFifo;
let cluster: LocalCluster;
let node: LocalNode;
let configDir: string;

/** GET over HTTPS with the test CA trusted, and whatever TLS options the client offers; the status, or the error. */
function httpsStatus(port: number, path: string, tls: RequestOptions = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, ca: readFileSync(certificates.ca), timeout: 2000, ...tls },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  // Certificates apart: PostgreSQL runs as another OS user, which cannot enter this directory.
  certificatesDir = tmpDir('stator-production-certs-');
  certificates = makeTestCertificates(certificatesDir);
  const encryptedKey = join(certificatesDir, 'api-encrypted.key');
  execFileSync(
    'openssl',
    ['pkey', '-in', certificates.nodeKey, '-aes256', '-passout', 'pass:api-key-pass', '-out', encryptedKey],
    { stdio: 'pipe' },
  );

  baseDir = tmpDir('stator-production-');
  configDir = join(baseDir, 'etc', 'postgresql', '15', 'main');
  const customConf = join(baseDir, 'custom.conf');
  writeFileSync(customConf, "work_mem = '7MB'\n", { mode: 0o644 });
  fifo = new WatchdogFifo(join(baseDir, 'watchdog.fifo'));
  const tlsEtcd = { ca: certificates.ca, cert: certificates.nodeCert, key: certificates.nodeKey };

  cluster = await LocalCluster.start({
    nodes: 1,
    baseDir,
    scope: SCOPE,
    etcd: { tls: tlsEtcd, extraArgs: ['--auth-token-ttl=2'] },
    prepareEtcd: (etcd) => enableEtcdAuth(etcd, 'root-s3cret', [user], tlsEtcd),
    etcd3: {
      protocol: 'https',
      cacert: certificates.ca,
      cert: certificates.clientCert,
      key: certificates.clientKey,
      username: user.name,
      password: user.password,
    },
    restapi: {
      certfile: certificates.nodeCert,
      keyfile: encryptedKey,
      keyfile_password: 'api-key-pass',
      ciphers: ALLOWED_CIPHER,
    },
    bootstrap: { pg_hba: ['host all all 192.0.2.0/24 scram-sha-256'] },
    postgresql: () => ({ config_dir: configDir, custom_conf: customConf, pg_ident: ['prodmap postgres postgres'] }),
    // The testing driver's FIFO stands in for /dev/watchdog: a test never arms the machine's real one.
    watchdog: () => ({ mode: 'automatic', driver: 'testing', device: fifo.path }),
    sections: {
      log: {
        type: 'json',
        format: ['asctime', 'levelname', 'message'],
        static_fields: { app: 'stator', env: 'prod' },
        dir: join(baseDir, 'logs'),
      },
    },
  });
  [node] = cluster.nodes;
  await waitFor(async () => (await httpsStatus(node.apiPort, '/primary').catch(() => 0)) === 200, {
    timeoutMs: 60_000,
    description: 'the node leading, over HTTPS',
  });
});

afterAll(async () => {
  await cluster?.stop();
  fifo?.close();
  if (!process.env.STATOR_KEEP_TEST_DIRS) {
    if (baseDir) removeDir(baseDir);
    if (certificatesDir) removeDir(certificatesDir);
  }
});

it('PostgreSQL reads its files from config_dir, custom_conf in place of the base file, pg_ident and bootstrap.pg_hba in them', async () => {
  const settings = await sql<{ name: string; setting: string }>(
    node,
    "SELECT name, setting FROM pg_settings WHERE name IN ('config_file', 'hba_file', 'ident_file', 'work_mem') ORDER BY name",
  );
  expect(settings).toEqual([
    { name: 'config_file', setting: join(configDir, 'postgresql.conf') },
    { name: 'hba_file', setting: join(configDir, 'pg_hba.conf') },
    { name: 'ident_file', setting: join(configDir, 'pg_ident.conf') },
    { name: 'work_mem', setting: String(7 * 1024) },
  ]);
  expect(await sql(node, 'SELECT map_name, sys_name, pg_username FROM pg_ident_file_mappings')).toEqual([
    { map_name: 'prodmap', sys_name: 'postgres', pg_username: 'postgres' },
  ]);
  const addresses = await sql<{ address: string | null }>(node, 'SELECT address FROM pg_hba_file_rules');
  expect(addresses.map((row) => row.address)).toContain('192.0.2.0');
});

it('serves its API over TLS with the encrypted key, to a client offering a listed cipher only', async () => {
  const tls12 = (cipher: string): RequestOptions => ({ maxVersion: 'TLSv1.2', ciphers: cipher });
  expect(await httpsStatus(node.apiPort, '/primary', tls12(ALLOWED_CIPHER))).toBe(200);
  await expect(httpsStatus(node.apiPort, '/primary', tls12(OTHER_CIPHER))).rejects.toThrow(
    /handshake failure|no shared cipher|alert/i,
  );
});

it('writes JSON log lines carrying the static fields', async () => {
  const entries = () =>
    readFileSync(join(baseDir, 'logs', 'stator.log'), 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, string>);
  await waitFor(() => entries().some((entry) => /leader/.test(entry.message)), {
    timeoutMs: 10_000,
    description: "the leader's verdict in the JSON log",
  });
  expect(Object.keys(entries()[0])).toEqual(['asctime', 'levelname', 'message', 'app', 'env']);
  expect(entries().every((entry) => entry.app === 'stator' && entry.env === 'prod')).toBe(true);
});

it('holds the watchdog while it leads: timeout set to ttl minus the safety margin, then a keepalive per cycle', async () => {
  // ttl 10 and Patroni's default safety_margin of 5.
  await waitFor(() => fifo.count('ping') >= 2, { timeoutMs: 15_000, description: 'two keepalives' });
  expect(fifo.records.find((record) => record.kind === 'timeout')).toMatchObject({ seconds: 5 });
  expect(fifo.count('magic_close')).toBe(0);
});
