import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest, RequestOptions } from 'node:https';
import type { TermRelease } from '../../common/term-release';

/** One request's deadline; the fence tries each endpoint in turn within its overall budget. */
const REQUEST_TIMEOUT_MS = 1000;

interface Answer {
  status: number;
  body: string;
}

/**
 * Revokes a leader's lease through etcd's JSON gateway, on Node built-ins alone (the fence loads
 * nothing else, to stay small). Revoking deletes the leader key and the member key attached to it,
 * so every replica's watch fires at once. A lease that is already gone counts as revoked: the term
 * ended either way.
 */
export async function revokeLease(release: TermRelease, budgetMs: number): Promise<{ revoked: boolean; detail: string }> {
  const deadline = Date.now() + budgetMs;
  const tls = readTls(release);
  const failures: string[] = [];
  while (Date.now() < deadline) {
    for (const endpoint of release.endpoints) {
      if (Date.now() >= deadline) break;
      try {
        const token = release.auth ? await authenticate(endpoint, release.auth, tls) : null;
        const answer = await post(endpoint, '/v3/lease/revoke', { ID: release.leaseId }, tls, token);
        if (answer.status === 200) return { revoked: true, detail: `lease ${release.leaseId} revoked through ${endpoint}` };
        if (answer.body.includes('requested lease not found')) return { revoked: true, detail: `lease ${release.leaseId} was already gone (${endpoint})` };
        failures.push(`${endpoint}: HTTP ${answer.status} ${answer.body.slice(0, 200)}`);
      } catch (error) {
        failures.push(`${endpoint}: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { revoked: false, detail: `lease ${release.leaseId} not revoked within ${budgetMs} ms: ${failures.slice(-3).join('; ')}` };
}

function readTls(release: TermRelease): Pick<RequestOptions, 'ca' | 'cert' | 'key'> {
  const read = (file: string | undefined) => (file ? readFileSync(file) : undefined);
  return { ca: read(release.tls?.cacert), cert: read(release.tls?.cert), key: read(release.tls?.key) };
}

async function authenticate(endpoint: string, auth: NonNullable<TermRelease['auth']>, tls: Pick<RequestOptions, 'ca' | 'cert' | 'key'>): Promise<string> {
  const answer = await post(endpoint, '/v3/auth/authenticate', { name: auth.username, password: auth.password }, tls, null);
  const token = answer.status === 200 ? (JSON.parse(answer.body) as { token?: string }).token : undefined;
  if (!token) throw new Error(`etcd refused user ${auth.username}: HTTP ${answer.status}`);
  return token;
}

function post(endpoint: string, path: string, body: unknown, tls: Pick<RequestOptions, 'ca' | 'cert' | 'key'>, token: string | null): Promise<Answer> {
  const url = new URL(path, endpoint);
  const payload = JSON.stringify(body);
  const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) };
  if (token) headers.authorization = token;
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const request = send(url, { method: 'POST', headers, timeout: REQUEST_TIMEOUT_MS, ...(url.protocol === 'https:' ? tls : {}) }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text = (text + chunk).slice(0, 4096)));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
      response.on('error', reject);
    });
    request.on('timeout', () => request.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`)));
    request.on('error', reject);
    request.end(payload);
  });
}
