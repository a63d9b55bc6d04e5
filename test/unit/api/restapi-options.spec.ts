import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Controller, Get, Module, Post } from '@nestjs/common';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createHttpApp } from '../../../src/api/http-server';
import { RestApiConfig, StatorConfig } from '../../../src/config/config.types';
import { memberAllowlist, MemberApiUrls } from '../../../src/security/member-allowlist';
import { PATRONI_REFERENCE_VERSION, STATOR_VERSION } from '../../../src/version';
import { makeTestCertificates, TestCertificates } from '../../helpers/test-certificates';
import { removeDir, tmpDir } from '../../helpers/tmp';

/**
 * The `restapi` keys that change what a client meets on the wire: the cipher list and an encrypted key of the HTTPS
 * server, the extra headers and the Server header of every answer, and the members admitted by
 * `allowlist_include_members`. Real servers on loopback, real clients.
 */

@Controller('node')
class TestNodeController {
  @Get()
  read(): { role: string } {
    return { role: 'replica' };
  }

  @Post()
  write(): { done: boolean } {
    return { done: true };
  }
}

/** Where the leader calls every member in failsafe mode. */
@Controller()
class TestFailsafeController {
  @Post('failsafe')
  failsafe(): string {
    return 'Accepted';
  }
}

@Module({ controllers: [TestNodeController, TestFailsafeController] })
class TestNodeModule {}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One request on a fresh connection; `tls`: the client's TLS options, `localAddress`: the address it calls from. */
function call(
  url: string,
  options: { method?: string; tls?: https.RequestOptions; localAddress?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const transport = target.protocol === 'https:' ? https : http;
    const request = transport.request(
      target,
      { method: options.method ?? 'GET', agent: false, localAddress: options.localAddress, ...options.tls },
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
    request.end();
  });
}

const openApps: NestFastifyApplication[] = [];
afterEach(async () => {
  await Promise.all(openApps.splice(0).map((app) => app.close()));
});

async function startApi(
  restapi: Partial<RestApiConfig>,
  compat: StatorConfig['compat'] = 'stator',
  members?: MemberApiUrls,
): Promise<string> {
  const app = await createHttpApp(
    { module: TestNodeModule },
    { restapi: { listen: '127.0.0.1:0', connect_address: '127.0.0.1:0', ...restapi }, compat },
    { memberApiUrls: members },
  );
  openApps.push(app);
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  return `${restapi.certfile ? 'https' : 'http'}://127.0.0.1:${port}/node`;
}

let dir: string;
let certs: TestCertificates;
let encryptedKey: string;
beforeAll(() => {
  dir = tmpDir('stator-restapi-options-');
  certs = makeTestCertificates(dir);
  encryptedKey = join(dir, 'node-encrypted.key');
  execFileSync(
    'openssl',
    ['pkey', '-in', certs.nodeKey, '-aes256', '-passout', 'pass:open sesame', '-out', encryptedKey],
    { stdio: 'pipe' },
  );
});
afterAll(() => removeDir(dir));

const trustCa = () => ({ ca: readFileSync(certs.ca) });
/** A TLS 1.2 client offering one cipher suite (TLS 1.3 suites are outside an OpenSSL cipher list, as in Python's ssl). */
const offering = (cipher: string): https.RequestOptions => ({ ...trustCa(), maxVersion: 'TLSv1.2', ciphers: cipher });

describe('restapi.ciphers', () => {
  const ALLOWED = 'ECDHE-ECDSA-AES256-GCM-SHA384';
  const OTHER = 'ECDHE-ECDSA-AES128-GCM-SHA256';

  it('completes the handshake with a client offering a listed cipher and refuses one offering only another', async () => {
    const url = await startApi({ certfile: certs.nodeCert, keyfile: certs.nodeKey, ciphers: ALLOWED });

    const listed = await call(url, { tls: offering(ALLOWED) });
    const unlisted = call(url, { tls: offering(OTHER) });

    expect(listed.status).toBe(200);
    await expect(unlisted).rejects.toThrow(/handshake failure|no shared cipher|alert/i);
  });

  it('serves a client offering that other cipher when no list is set', async () => {
    const url = await startApi({ certfile: certs.nodeCert, keyfile: certs.nodeKey });

    expect((await call(url, { tls: offering(OTHER) })).status).toBe(200);
  });

  it('refuses to start with a list OpenSSL cannot use, naming the key', async () => {
    await expect(
      startApi({ certfile: certs.nodeCert, keyfile: certs.nodeKey, ciphers: 'NO-SUCH-CIPHER' }),
    ).rejects.toThrow(/^restapi\.ciphers: OpenSSL accepts none of "NO-SUCH-CIPHER"/);
  });
});

describe('restapi.keyfile_password', () => {
  it('serves HTTPS with an encrypted key and its passphrase', async () => {
    const url = await startApi({ certfile: certs.nodeCert, keyfile: encryptedKey, keyfile_password: 'open sesame' });

    const answer = await call(url, { tls: trustCa() });

    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ role: 'replica' });
  });

  it('refuses to start with a wrong passphrase, or none, naming the keys', async () => {
    await expect(
      startApi({ certfile: certs.nodeCert, keyfile: encryptedKey, keyfile_password: 'guess' }),
    ).rejects.toThrow(/^restapi\.keyfile: cannot load the private key .*is restapi\.keyfile_password right\?/);
    await expect(startApi({ certfile: certs.nodeCert, keyfile: encryptedKey })).rejects.toThrow(
      /^restapi\.keyfile: .*set restapi\.keyfile_password/,
    );
  });
});

describe('restapi.http_extra_headers and https_extra_headers', () => {
  const HTTP_HEADERS = { 'X-Frame-Options': 'SAMEORIGIN', 'X-Content-Type-Options': 'nosniff' };
  const HTTPS_HEADERS = {
    'Strict-Transport-Security': 'max-age=31536000; includeSubDomains',
    'X-Frame-Options': 'DENY',
  };

  it('adds the http headers to every answer over HTTP, refusals and unknown paths included, and not the https ones', async () => {
    const url = await startApi({
      http_extra_headers: HTTP_HEADERS,
      https_extra_headers: HTTPS_HEADERS,
      allowlist: ['10.0.0.0/8'],
    });

    const read = await call(url);
    const refused = await call(url, { method: 'POST' });
    const missing = await call(url.replace('/node', '/nowhere'));

    for (const answer of [read, refused, missing]) {
      expect(answer.headers['x-frame-options']).toBe('SAMEORIGIN');
      expect(answer.headers['x-content-type-options']).toBe('nosniff');
      expect(answer.headers['strict-transport-security']).toBeUndefined();
    }
    expect([read.status, refused.status, missing.status]).toEqual([200, 403, 404]);
  });

  it('adds both over HTTPS, the https ones winning a header both name', async () => {
    const url = await startApi({
      certfile: certs.nodeCert,
      keyfile: certs.nodeKey,
      http_extra_headers: HTTP_HEADERS,
      https_extra_headers: HTTPS_HEADERS,
    });

    const answer = await call(url, { tls: trustCa() });

    expect(answer.status).toBe(200);
    expect(answer.headers['strict-transport-security']).toBe('max-age=31536000; includeSubDomains');
    expect(answer.headers['x-content-type-options']).toBe('nosniff');
    expect(answer.headers['x-frame-options']).toBe('DENY');
  });
});

describe('restapi.server_tokens', () => {
  it.each([
    ['productonly', 'stator', 'Stator'],
    ['minimal', 'stator', `Stator/${STATOR_VERSION}`],
    ['productonly', 'patroni', 'Patroni'],
    ['minimal', 'patroni', `Patroni/${PATRONI_REFERENCE_VERSION}`],
  ] as const)('%s with compat %s: the Server header says %s', async (tokens, compat, expected) => {
    const url = await startApi({ server_tokens: tokens }, compat);

    expect((await call(url)).headers.server).toBe(expected);
  });

  it('original (the default) sends no Server header, as before the setting existed', async () => {
    const url = await startApi({ server_tokens: 'original' });
    const unset = await startApi({});

    expect((await call(url)).headers.server).toBeUndefined();
    expect((await call(unset)).headers.server).toBeUndefined();
  });
});

describe('restapi.allowlist_include_members', () => {
  // Every 127.0.0.0/8 address is loopback on Linux: a client can call from 127.0.0.2 or 127.0.0.3.
  it('admits unsafe calls from the hosts of the members api_url, and refuses other addresses', async () => {
    const members = ['http://127.0.0.1:8008/patroni', 'https://127.0.0.3:8008/patroni'];
    const url = await startApi({ allowlist_include_members: true }, 'stator', () => members);

    const fromMember = await call(url, { method: 'POST', localAddress: '127.0.0.3' });
    const fromStranger = await call(url, { method: 'POST', localAddress: '127.0.0.2' });
    const readFromStranger = await call(url, { localAddress: '127.0.0.2' });

    expect(fromMember.status).toBe(201);
    expect(fromStranger.status).toBe(403);
    expect(fromStranger.body).toBe('Access is denied');
    expect(readFromStranger.status).toBe(200);
  });

  it('reads the members at each call: one that joins is admitted, one that left is refused', async () => {
    let members = ['http://127.0.0.1:8008/patroni'];
    const url = await startApi({ allowlist_include_members: true }, 'stator', () => members);

    expect((await call(url, { method: 'POST', localAddress: '127.0.0.2' })).status).toBe(403);
    members = [...members, 'http://127.0.0.2:8008/patroni'];
    expect((await call(url, { method: 'POST', localAddress: '127.0.0.2' })).status).toBe(201);
    members = ['http://127.0.0.1:8008/patroni'];
    expect((await call(url, { method: 'POST', localAddress: '127.0.0.2' })).status).toBe(403);
  });

  it('leaves POST /failsafe to the allowlist alone, as the reference: the leader calls it while etcd is out of reach', async () => {
    const url = await startApi({ allowlist_include_members: true }, 'stator', () => ['http://127.0.0.1:8008/patroni']);
    const guarded = await startApi({ allowlist: ['127.0.0.4'], allowlist_include_members: true }, 'stator', () => [
      'http://127.0.0.2:8008/patroni',
    ]);

    expect((await call(url.replace('/node', '/failsafe'), { method: 'POST', localAddress: '127.0.0.2' })).status).toBe(
      201,
    );
    expect(
      (await call(guarded.replace('/node', '/failsafe'), { method: 'POST', localAddress: '127.0.0.2' })).status,
    ).toBe(403);
    expect(
      (await call(guarded.replace('/node', '/failsafe'), { method: 'POST', localAddress: '127.0.0.4' })).status,
    ).toBe(201);
  });

  it('admits the allowlist and the members together, a host name resolved', async () => {
    const url = await startApi({ allowlist: ['127.0.0.4'], allowlist_include_members: true }, 'stator', () => [
      'http://localhost:8008/patroni',
    ]);

    expect((await call(url, { method: 'POST', localAddress: '127.0.0.4' })).status).toBe(201);
    expect((await call(url, { method: 'POST', localAddress: '127.0.0.1' })).status).toBe(201);
    expect((await call(url, { method: 'POST', localAddress: '127.0.0.5' })).status).toBe(403);
  });
});

describe('allowlist_include_members: a member host that cannot be resolved', () => {
  it('admits no one through it, says so once, and does not hold the request past the deadline', async () => {
    const warnings: string[] = [];
    const neverAnswers = () => new Promise<string[]>(() => undefined);
    const members = memberAllowlist(
      () => ['http://db-2.internal:8008/patroni', 'http://127.0.0.1:8008/patroni'],
      (m) => warnings.push(m),
      neverAnswers,
    );

    const started = performance.now();
    const stranger = await members.allows('127.0.0.2');
    const waited = performance.now() - started;
    const again = await members.allows('127.0.0.2');
    const member = await members.allows('::ffff:127.0.0.1');

    expect([stranger, again, member]).toEqual([false, false, true]);
    expect(waited).toBeLessThan(3_000);
    expect(warnings).toEqual([
      'restapi.allowlist_include_members: cannot resolve member host "db-2.internal": no answer within 2000 ms',
    ]);
  });
});
