import { execFileSync } from 'node:child_process';
import * as http from 'node:http';
import { readFileSync } from 'node:fs';
import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { STATOR_VERSION } from '../../src/version';
import { waitFor } from '../helpers/wait-for';

/**
 * Patroni's `restapi` and `log` keys on a real agent (one node, its own etcd and PostgreSQL): the listen backlog the
 * kernel reports, the Server and extra headers of its answers, the members' hosts admitted by
 * `allowlist_include_members` (its own member key's address) and others refused, and a JSON log with static fields
 * whose repeated heartbeat is written once. Agents run from `dist/`: run `npm run build` first.
 */
jest.setTimeout(120_000);

const LOOP_WAIT = 2;

let cluster: LocalCluster;
let baseDir: string;
let node: LocalNode;

beforeAll(async () => {
  baseDir = tmpDir('stator-restapi-log-');
  cluster = await LocalCluster.start({
    nodes: 1,
    baseDir,
    loopWait: LOOP_WAIT,
    restapi: {
      request_queue_size: 7,
      server_tokens: 'Minimal',
      http_extra_headers: { 'X-Frame-Options': 'SAMEORIGIN' },
      allowlist_include_members: true,
    },
    sections: {
      log: {
        type: 'json',
        format: ['levelname', 'message'],
        static_fields: { app: 'stator-test' },
        deduplicate_heartbeat_logs: true,
      },
    },
  });
  await cluster.waitForLeader(60_000);
  node = cluster.nodes[0];
});

afterAll(async () => {
  await cluster?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function call(path: string, options: { method?: string; localAddress?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      `${node.apiUrl}${path}`,
      { method: options.method ?? 'GET', agent: false, localAddress: options.localAddress },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    request.on('error', reject);
    request.end();
  });
}

/** The agent's JSON log lines (its standard output). */
function logRecords(): Array<Record<string, unknown>> {
  return readFileSync(node.logPath, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

it('writes its repeated leader heartbeat once, in JSON lines that all carry the static fields', async () => {
  const firstSeen = Number((await node.status())?.dcs_last_seen);
  // Three more HA cycles: each refreshes the leader lock and dcs_last_seen, and would log the heartbeat again.
  await waitFor(async () => Number((await node.status())?.dcs_last_seen) >= firstSeen + 3 * LOOP_WAIT, {
    timeoutMs: 20_000,
    description: 'three more HA cycles',
  });

  const records = logRecords();
  expect(records.length).toBeGreaterThan(0);
  expect(records.every((record) => record.app === 'stator-test' && typeof record.levelname === 'string')).toBe(true);
  // Without the setting there would be one per cycle: four at least.
  const heartbeat = `no action. I am (${node.name}), the leader with the lock`;
  expect(records.filter((record) => record.message === heartbeat)).toHaveLength(1);
});

it('listens with the backlog request_queue_size asks for', () => {
  // For a listening socket, `ss` reports the backlog as Send-Q.
  const socket = execFileSync('ss', ['-ltnH', `sport = :${node.apiPort}`], { encoding: 'utf8' }).trim();
  expect(socket.split(/\s+/)[2]).toBe('7');
});

it('answers with the Server header server_tokens asks for and the extra headers', async () => {
  for (const path of ['/health', '/nowhere']) {
    const answer = await call(path);
    expect(answer.headers.server).toBe(`Stator/${STATOR_VERSION}`);
    expect(answer.headers['x-frame-options']).toBe('SAMEORIGIN');
  }
});

it("admits unsafe calls from its members' hosts (its own api_url: 127.0.0.1) and refuses other addresses", async () => {
  const fromMember = await call('/reload', { method: 'POST', localAddress: '127.0.0.1' });
  const fromStranger = await call('/reload', { method: 'POST', localAddress: '127.0.0.2' });

  expect(fromMember.status).toBe(202);
  expect(fromStranger.status).toBe(403);
  expect(fromStranger.body).toBe('Access is denied');
});
