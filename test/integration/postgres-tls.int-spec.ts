import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';
import { killLeaderAndWait } from '../helpers/kill-leader';
import { makeTestCertificates, TestCertificates } from '../helpers/test-certificates';

/**
 * PostgreSQL connections as Patroni's own acceptance harness configures them: every TCP login needs
 * TLS with a client certificate the cluster's CA signed (`hostssl ... clientcert=verify-ca`), each
 * role's `sslmode` / `sslrootcert` / `sslcert` / `sslkey` in `postgresql.authentication`, the agent's
 * own connections through the unix socket (`use_unix_socket`), a `rewind` role, `post_bootstrap`
 * and `basebackup` options. Agents run from `dist/`: run `npm run build` first.
 */
jest.setTimeout(240_000);

let cluster: LocalCluster;
let baseDir: string;
let certificates: TestCertificates;

/** The node's server through its unix socket, as the superuser (`local all all trust`). */
async function local<T>(node: LocalNode, text: string): Promise<T[]> {
  const client = new Client({
    host: node.dir,
    port: node.pgPort,
    user: 'postgres',
    database: 'postgres',
    connectionTimeoutMillis: 2000,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.query(text)).rows as T[];
  } finally {
    await client.end().catch(() => undefined);
  }
}

beforeAll(async () => {
  baseDir = tmpDir('stator-pg-tls-');
  const certDir = join(baseDir, 'certs');
  mkdirSync(certDir);
  certificates = makeTestCertificates(certDir);
  // PostgreSQL reads its certificate and key as its own OS user, and refuses a key others can read; pg_basebackup
  // and pg_rewind run as that user too, so the client certificate is its to read (the agent, root, reads anything).
  const postgresUid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const postgresGid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  chmodSync(certDir, 0o755);
  for (const file of [
    certificates.ca,
    certificates.nodeCert,
    certificates.nodeKey,
    certificates.clientCert,
    certificates.clientKey,
  ]) {
    chownSync(file, postgresUid, postgresGid);
    chmodSync(file, file.endsWith('.key') ? 0o600 : 0o644);
  }
  const tls = {
    sslmode: 'verify-ca',
    sslrootcert: certificates.ca,
    sslcert: certificates.clientCert,
    sslkey: certificates.clientKey,
  };
  cluster = await LocalCluster.start({
    nodes: 2,
    baseDir,
    ttl: 10,
    loopWait: 2,
    retryTimeout: 4,
    sections: {
      bootstrap: {
        dcs: {
          ttl: 10,
          loop_wait: 2,
          retry_timeout: 4,
          postgresql: { use_pg_rewind: true, use_slots: true, parameters: { max_connections: 50 } },
        },
        post_bootstrap: '/usr/lib/postgresql/15/bin/psql -w -c "CREATE TABLE post_bootstrap_ran ()"',
      },
    },
    postgresql: (index) => ({
      authentication: {
        superuser: { username: 'postgres', password: 'postgres', ...tls },
        replication: { username: 'replicator', password: 'replicator-secret', ...tls },
        rewind: { username: 'rewinder', password: 'rewind-secret', ...tls },
      },
      use_unix_socket: true,
      basebackup: [{ 'max-rate': '100M' }, 'verbose'],
      parameters: {
        unix_socket_directories: join(baseDir, `node${index}`),
        ssl: 'on',
        ssl_ca_file: certificates.ca,
        ssl_cert_file: certificates.nodeCert,
        ssl_key_file: certificates.nodeKey,
      },
      pg_hba: [
        'local all all trust',
        'hostssl replication replicator 127.0.0.1/32 scram-sha-256 clientcert=verify-ca',
        'hostssl all all 127.0.0.1/32 scram-sha-256 clientcert=verify-ca',
      ],
    }),
  });
  await cluster.waitForHealthy(90_000);
});

afterAll(async () => {
  await cluster?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

it("streams over TLS with the replication role's client certificate, on a replica cloned over it (with the basebackup options)", async () => {
  const leader = await cluster.waitForHealthy(30_000);
  const replica = cluster.nodes.find((node) => node !== leader)!;
  const senders = await local<{ ssl: boolean; usename: string }>(
    leader,
    'SELECT s.ssl, r.usename FROM pg_stat_replication r JOIN pg_stat_ssl s USING (pid)',
  );
  expect(senders).toEqual([{ ssl: true, usename: 'replicator' }]);
  // pg_basebackup ran with --max-rate and --verbose from `basebackup`: an option it refused would have failed the clone.
  expect(
    (await local<{ n: string }>(replica, "SELECT count(*) AS n FROM pg_class WHERE relname = 'post_bootstrap_ran'"))[0]
      .n,
  ).toBe('1');
});

it('runs post_bootstrap once with a working conninfo, and creates the rewind role with what pg_rewind needs', async () => {
  const leader = await cluster.waitForHealthy(30_000);
  expect(await local(leader, "SELECT 1 FROM pg_class WHERE relname = 'post_bootstrap_ran'")).toHaveLength(1);
  const [grants] = await local<Record<string, boolean>>(
    leader,
    `SELECT rolcanlogin AS login,
            has_function_privilege('rewinder', 'pg_catalog.pg_read_binary_file(text, bigint, bigint, boolean)', 'EXECUTE') AS read_file,
            has_function_privilege('rewinder', 'pg_catalog.pg_ls_dir(text, boolean, boolean)', 'EXECUTE') AS ls_dir
       FROM pg_roles WHERE rolname = 'rewinder'`,
  );
  expect(grants).toEqual({ login: true, read_file: true, ls_dir: true });
});

it("reads its own server through the unix socket, so a TCP login without the agent's certificate changes nothing", async () => {
  const leader = await cluster.waitForHealthy(30_000);
  const agents = await local<{ tcp: boolean }>(
    leader,
    "SELECT client_addr IS NOT NULL AS tcp FROM pg_stat_activity WHERE application_name = 'stator'",
  );
  expect(agents.length).toBeGreaterThan(0);
  expect(agents.every((row) => !row.tcp)).toBe(true);
  // Without a client certificate, TCP is refused: the agent could not have used it.
  const plain = new Client({
    host: '127.0.0.1',
    port: leader.pgPort,
    user: 'postgres',
    password: 'postgres',
    database: 'postgres',
    ssl: { rejectUnauthorized: false },
  });
  plain.on('error', () => undefined);
  await expect(plain.connect()).rejects.toThrow(/certificate|connection requires a valid client certificate/);
});

it('switches over, and a power-cut leader rejoins through pg_rewind as the rewind role, over TLS', async () => {
  const first = await cluster.waitForHealthy(30_000);
  const candidate = cluster.nodes.find((node) => node !== first)!;
  const response = await fetch(`${first.apiUrl}/switchover`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ leader: first.name, candidate: candidate.name }),
  });
  expect(response.status).toBe(200);
  await waitFor(async () => (await cluster.waitForHealthy(60_000)).name === candidate.name, {
    timeoutMs: 60_000,
    description: `${candidate.name} leading`,
  });

  // A former primary stopped hard rejoins through pg_rewind (which finds nothing to do or rewinds): it connects as the rewind role.
  await killLeaderAndWait(cluster, candidate, { loss: 'power-cut', timeoutMs: 60_000 });
  candidate.start();
  const leader = await cluster.waitForHealthy(90_000);
  expect(leader.name).toBe(first.name);
  const log = readFileSync(candidate.logPath, 'utf8');
  expect(log).toMatch(new RegExp(`running pg_rewind from ${first.name}`));
  expect(log).not.toMatch(/pg_rewind from .* failed/);
});
