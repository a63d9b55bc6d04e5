import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as http from 'node:http';
import * as https from 'node:https';
import { AddressInfo } from 'node:net';
import { Body, Controller, Get, Headers, Module, Post } from '@nestjs/common';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createHttpApp } from '../../../src/api/http-server';
import { resolveAllowlist } from '../../../src/security/allowlist';
import { RestApiConfig, StatorConfig } from '../../../src/config/config.types';
import { createPeerProbe, probePeerOverHttp } from '../../../src/ha/peer-probe';
import { makeTestCertificates, TestCertificates } from '../../helpers/test-certificates';
import { removeDir, tmpDir } from '../../helpers/tmp';

/** What the last GET carried, so the tests can see what a peer probe sends. */
let lastAuthorizationOnGet: string | undefined;

/** A replica's status document, as a peer probe expects it. */
const STATUS = { role: 'replica', timeline: 3, xlog: { received_location: 2048, replayed_location: 1024 } };

@Controller('node')
class TestNodeController {
  @Get()
  read(@Headers('authorization') authorization?: string): typeof STATUS {
    lastAuthorizationOnGet = authorization;
    return STATUS;
  }

  @Post()
  write(@Body() body: unknown): { received: unknown } {
    return { received: body };
  }
}

@Module({ controllers: [TestNodeController] })
class TestNodeModule {}

const CREDENTIALS = { username: 'admin', password: 's3cret' };
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

interface CallOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** Client TLS: the CA to trust and the certificate to present. */
  tls?: https.RequestOptions;
}

/** One request on a fresh connection, as a client sees it. */
function call(url: string, options: CallOptions = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const transport = target.protocol === 'https:' ? https : http;
    const headers = {
      ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...options.headers,
    };
    const request = transport.request(
      target,
      { method: options.method ?? 'GET', headers, agent: false, ...options.tls },
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
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(options.body);
  });
}

const openApps: NestFastifyApplication[] = [];
afterEach(async () => {
  await Promise.all(openApps.splice(0).map((app) => app.close()));
});

/** Starts the test API with these `restapi` settings; returns the URL of its test route. */
async function startApi(
  restapi: Partial<RestApiConfig>,
  compat: StatorConfig['compat'] = 'stator',
  host = '127.0.0.1',
): Promise<string> {
  const app = await createHttpApp(
    { module: TestNodeModule },
    { restapi: { listen: `${host}:0`, connect_address: '127.0.0.1:0', ...restapi }, compat },
  );
  openApps.push(app);
  await app.listen(0, host);
  const { port } = app.getHttpServer().address() as AddressInfo;
  return `${restapi.certfile ? 'https' : 'http'}://127.0.0.1:${port}/node`;
}

describe('API access checks over HTTP', () => {
  it('never checks GET', async () => {
    const url = await startApi({ authentication: CREDENTIALS, allowlist: ['10.0.0.0/8'] });

    const answer = await call(url);

    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual(STATUS);
  });

  it('answers a POST without credentials with 401 "no auth header received" and a Basic challenge', async () => {
    const url = await startApi({ authentication: CREDENTIALS });

    const answer = await call(url, { method: 'POST', body: '{}' });

    expect(answer.status).toBe(401);
    expect(answer.body).toBe('no auth header received');
    expect(answer.headers['www-authenticate']).toBe('Basic realm="Stator"');
    expect(answer.headers['content-type']).toBe('text/plain; charset=utf-8');
  });

  it('answers wrong credentials with 401 "not authenticated"', async () => {
    const url = await startApi({ authentication: CREDENTIALS });

    const wrongPassword = await call(url, {
      method: 'POST',
      body: '{}',
      headers: { authorization: basic('admin', 'guess') },
    });
    const otherScheme = await call(url, { method: 'POST', body: '{}', headers: { authorization: 'Bearer s3cret' } });

    for (const answer of [wrongPassword, otherScheme]) {
      expect(answer.status).toBe(401);
      expect(answer.body).toBe('not authenticated');
      expect(answer.headers['www-authenticate']).toBe('Basic realm="Stator"');
    }
  });

  it('lets a POST with the right credentials through to the route, body and all', async () => {
    const url = await startApi({ authentication: CREDENTIALS });

    const answer = await call(url, {
      method: 'POST',
      body: '{"leader":"n1"}',
      headers: { authorization: basic('admin', 's3cret') },
    });

    expect(answer.status).toBe(201);
    expect(JSON.parse(answer.body)).toEqual({ received: { leader: 'n1' } });
  });

  it.each(['PUT', 'PATCH', 'DELETE'])('checks %s like POST', async (method) => {
    const url = await startApi({ authentication: CREDENTIALS });

    const answer = await call(url, { method });

    expect(answer.status).toBe(401);
    expect(answer.body).toBe('no auth header received');
  });

  it('checks before reading the body: a malformed body without credentials gets 401, not 400', async () => {
    const url = await startApi({ authentication: CREDENTIALS });

    const answer = await call(url, { method: 'POST', body: '{not json' });

    expect(answer.status).toBe(401);
    expect(answer.body).toBe('no auth header received');
  });

  it('names the realm Patroni in Patroni compatibility mode', async () => {
    const url = await startApi({ authentication: CREDENTIALS }, 'patroni');

    const answer = await call(url, { method: 'POST', body: '{}' });

    expect(answer.headers['www-authenticate']).toBe('Basic realm="Patroni"');
  });

  it('refuses a client outside the allowlist with 403 "Access is denied", before looking at credentials', async () => {
    const url = await startApi({ authentication: CREDENTIALS, allowlist: ['10.0.0.0/8', '192.168.1.7'] });

    const withoutCredentials = await call(url, { method: 'POST', body: '{}' });
    const withCredentials = await call(url, {
      method: 'POST',
      body: '{}',
      headers: { authorization: basic('admin', 's3cret') },
    });

    for (const answer of [withoutCredentials, withCredentials]) {
      expect(answer.status).toBe(403);
      expect(answer.body).toBe('Access is denied');
      expect(answer.headers['content-type']).toBe('text/plain; charset=utf-8');
    }
  });

  it('lets an allowlisted host name through to the credentials check', async () => {
    const url = await startApi({ authentication: CREDENTIALS, allowlist: ['localhost'] });

    const withoutCredentials = await call(url, { method: 'POST', body: '{}' });
    const withCredentials = await call(url, {
      method: 'POST',
      body: '{}',
      headers: { authorization: basic('admin', 's3cret') },
    });

    expect(withoutCredentials.status).toBe(401);
    expect(withCredentials.status).toBe(201);
  });

  it('matches an IPv4 client seen by an IPv6 socket (::ffff:127.0.0.1) against IPv4 entries', async () => {
    // An IPv6 socket bound to the IPv4-mapped loopback: still only 127.0.0.1, but clients appear as ::ffff:127.0.0.1.
    const url = await startApi({ allowlist: ['127.0.0.0/8'] }, 'stator', '::ffff:127.0.0.1');

    const answer = await call(url, { method: 'POST', body: '{}' });

    expect(answer.status).toBe(201);
  });

  it('resolves host names once and skips unusable entries with a warning', async () => {
    const warnings: string[] = [];
    const resolver = async (host: string) => {
      if (host === 'admin.example') return ['192.0.2.10'];
      throw new Error(`getaddrinfo ENOTFOUND ${host}`);
    };

    const allowlist = await resolveAllowlist(
      ['admin.example', 'gone.example', '10.1.2.3/8', 'fd00::/8', '10.0.0.0/40'],
      (w) => warnings.push(w),
      resolver,
    );

    expect(['192.0.2.10', '::ffff:192.0.2.10', '10.200.0.1', 'fd12::1'].map((a) => allowlist.allows(a))).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(['192.0.2.11', '11.0.0.1', 'fe80::1', undefined].map((a) => allowlist.allows(a))).toEqual([
      false,
      false,
      false,
      false,
    ]);
    expect(warnings).toEqual([
      expect.stringMatching(/^restapi\.allowlist: ignoring "gone\.example": .*ENOTFOUND/),
      expect.stringMatching(/^restapi\.allowlist: ignoring "10\.0\.0\.0\/40"/),
    ]);
  });
});

describe('API over HTTPS', () => {
  let dir: string;
  /** PEM file paths: a CA, a node certificate for 127.0.0.1 issued by it, a client certificate, and a stranger's. */
  let files: TestCertificates;
  let trustCa: https.RequestOptions;
  let clientCertificate: https.RequestOptions;

  beforeAll(() => {
    dir = tmpDir('stator-tls-');
    // The node certificate also serves as its client certificate when it probes peers.
    files = makeTestCertificates(dir);
    trustCa = { ca: readFileSync(files.ca) };
    clientCertificate = { ...trustCa, cert: readFileSync(files.clientCert), key: readFileSync(files.clientKey) };
  });
  afterAll(() => removeDir(dir));

  const tlsSettings = (verifyClient: RestApiConfig['verify_client']): Partial<RestApiConfig> => ({
    certfile: files.nodeCert,
    keyfile: files.nodeKey,
    cafile: files.ca,
    verify_client: verifyClient,
  });

  it('serves HTTPS with the configured certificate, trusted through the CA', async () => {
    const url = await startApi({ certfile: files.nodeCert, keyfile: files.nodeKey });

    const answer = await call(url, { tls: trustCa });

    expect(url).toMatch(/^https:/);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual(STATUS);
    await expect(call(url)).rejects.toThrow(/self[- ]signed|unable to (get|verify)/i);
  });

  it('with verify_client required, fails the handshake without a client certificate, even for GET', async () => {
    const url = await startApi(tlsSettings('required'));

    await expect(call(url, { tls: trustCa })).rejects.toMatchObject({
      code: expect.stringMatching(/^(ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED|ECONNRESET)$/),
    });
    const answer = await call(url, { tls: clientCertificate });

    expect(answer.status).toBe(200);
  });

  it('with verify_client optional, serves GET without a certificate but refuses a POST with 403 "client certificate required"', async () => {
    const url = await startApi(tlsSettings('optional'));
    const stranger = { ...trustCa, cert: readFileSync(files.strangerCert), key: readFileSync(files.strangerKey) };

    const get = await call(url, { tls: trustCa });
    const postWithout = await call(url, { method: 'POST', body: '{}', tls: trustCa });
    const postWithStrangersCertificate = await call(url, { method: 'POST', body: '{}', tls: stranger });
    const postWith = await call(url, { method: 'POST', body: '{}', tls: clientCertificate });

    expect(get.status).toBe(200);
    for (const answer of [postWithout, postWithStrangersCertificate]) {
      expect(answer.status).toBe(403);
      expect(answer.body).toBe('client certificate required');
    }
    expect(postWith.status).toBe(201);
  });

  it('checks the client certificate before the credentials', async () => {
    const url = await startApi({ ...tlsSettings('optional'), authentication: CREDENTIALS });

    const withoutCertificate = await call(url, { method: 'POST', body: '{}', tls: trustCa });
    const withCertificate = await call(url, { method: 'POST', body: '{}', tls: clientCertificate });

    expect([withoutCertificate.status, withoutCertificate.body]).toEqual([403, 'client certificate required']);
    expect([withCertificate.status, withCertificate.body]).toEqual([401, 'no auth header received']);
  });

  it('probes a peer over mutual TLS with the CA, the node certificate and the credentials', async () => {
    const restapi = {
      listen: '127.0.0.1:0',
      connect_address: '127.0.0.1:0',
      ...tlsSettings('required'),
      authentication: CREDENTIALS,
    };
    const url = await startApi(restapi);

    const reading = await createPeerProbe(restapi)('n2', url);

    expect(reading).toEqual({
      name: 'n2',
      reachable: true,
      role: 'replica',
      isPrimary: false,
      walPosition: 2048,
      timeline: 3,
      tags: undefined,
    });
    expect(lastAuthorizationOnGet).toBe(basic('admin', 's3cret'));
  });

  it("probes a peer that requires client certificates with ctl's certificate, encrypted key and credentials (as Patroni's agent), the node's own API being plain HTTP", async () => {
    const url = await startApi({ ...tlsSettings('required'), authentication: CREDENTIALS });
    const encryptedKey = join(dir, 'client-encrypted.key');
    execFileSync(
      'openssl',
      ['pkey', '-in', files.clientKey, '-aes256', '-passout', 'pass:k3y-secret', '-out', encryptedKey],
      { stdio: 'pipe' },
    );
    const plainApi = { listen: '127.0.0.1:0', connect_address: '127.0.0.1:0' };
    const ctl = {
      cacert: files.ca,
      certfile: files.clientCert,
      keyfile: encryptedKey,
      keyfile_password: 'k3y-secret',
      authentication: CREDENTIALS,
    };

    expect(await createPeerProbe(plainApi, ctl)('n2', url)).toMatchObject({
      name: 'n2',
      reachable: true,
      walPosition: 2048,
    });
    expect(lastAuthorizationOnGet).toBe(basic('admin', 's3cret'));
    expect(await createPeerProbe({ ...plainApi, cafile: files.ca })('n2', url)).toEqual({
      name: 'n2',
      reachable: false,
    });
    expect(() => createPeerProbe(plainApi, { ...ctl, keyfile_password: 'wrong' })).toThrow(
      /^ctl\.keyfile: cannot load the client certificate's private key .*; is ctl\.keyfile_password right\?$/,
    );
    expect(() => createPeerProbe(plainApi, { ...ctl, keyfile_password: undefined })).toThrow(
      /set ctl\.keyfile_password$/,
    );
  });

  it('sees a TLS peer as unreachable without its CA', async () => {
    const url = await startApi({ certfile: files.nodeCert, keyfile: files.nodeKey });

    expect(await probePeerOverHttp('n2', url)).toEqual({ name: 'n2', reachable: false });
    expect(await createPeerProbe({ listen: '127.0.0.1:0', connect_address: '127.0.0.1:0' })('n2', url)).toEqual({
      name: 'n2',
      reachable: false,
    });
  });

  it('still probes plain HTTP peers, without credentials when none are configured', async () => {
    const url = await startApi({});

    const reading = await probePeerOverHttp('n3', url);

    expect(reading).toMatchObject({ name: 'n3', reachable: true, walPosition: 2048 });
    expect(lastAuthorizationOnGet).toBeUndefined();
  });
});
