import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { makeTestCertificates, TestCertificates } from '../../helpers/test-certificates';
import { removeDir, tmpDir } from '../../helpers/tmp';
import { clusterDocument, FakeNode, json, statorctl } from './fake-node';

describe('statorctl over TLS with client certificates', () => {
  let dir: string;
  let certs: TestCertificates;
  let node: FakeNode;

  beforeAll(async () => {
    dir = tmpDir('statorctl-tls-');
    certs = makeTestCertificates(dir);
    node = new FakeNode({});
    // As restapi.verify_client: required: no certificate issued by the CA, no handshake.
    await node.start({
      cert: readFileSync(certs.nodeCert),
      key: readFileSync(certs.nodeKey),
      ca: readFileSync(certs.ca),
      requestCert: true,
      rejectUnauthorized: true,
    });
    node.routes['GET /cluster'] = json(clusterDocument(node.url));
  });
  afterAll(async () => {
    await node.stop();
    removeDir(dir);
  });

  it('trusts the CA and presents the client certificate given by flags', async () => {
    const result = await statorctl([
      '--api',
      node.url,
      '--cacert',
      certs.ca,
      '--cert',
      certs.clientCert,
      '--key',
      certs.clientKey,
      'list',
      '--format',
      'json',
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toHaveLength(3);
  });

  it('fails with exit code 1 and the reason when the server certificate is not trusted or no client certificate is sent', async () => {
    const untrusted = await statorctl(['--api', node.url, 'list']);
    expect(untrusted.code).toBe(1);
    expect(untrusted.stderr).toMatch(
      /^Error: no member of --api https:\/\/127\.0\.0\.1:\d+ answers: .*(SELF_SIGNED|UNABLE_TO_VERIFY|unable to verify|self-signed)/i,
    );
    const noClientCertificate = await statorctl(['--api', node.url, '--insecure', 'list']);
    expect(noClientCertificate.code).toBe(1);
    expect(noClientCertificate.stderr).toMatch(/^Error: no member of /);
  });

  it('reads ctl.cacert, ctl.certfile, ctl.keyfile and restapi.connect_address from a patronictl configuration file', async () => {
    const file = join(dir, 'ctl.yml');
    writeFileSync(
      file,
      stringify({
        scope: 'demo',
        restapi: { connect_address: node.url.replace('https://', ''), certfile: certs.nodeCert },
        ctl: { cacert: certs.ca, certfile: certs.clientCert, keyfile: certs.clientKey },
      }),
    );
    const result = await statorctl(['-c', file, 'list', '--format', 'json']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  it('decrypts ctl.keyfile with ctl.keyfile_password, and names the key when the password is missing, wrong or not a string', async () => {
    const encryptedKey = join(dir, 'client-encrypted.key');
    execFileSync(
      'openssl',
      ['pkey', '-in', certs.clientKey, '-aes256', '-passout', 'pass:k3y-secret', '-out', encryptedKey],
      { stdio: 'pipe' },
    );
    const withCtl = (ctl: Record<string, unknown>) => {
      const file = join(dir, 'ctl-encrypted.yml');
      writeFileSync(
        file,
        stringify({
          scope: 'demo',
          restapi: { connect_address: node.url.replace('https://', ''), certfile: certs.nodeCert },
          ctl: { cacert: certs.ca, certfile: certs.clientCert, keyfile: encryptedKey, ...ctl },
        }),
      );
      return statorctl(['-c', file, 'list', '--format', 'json']);
    };
    const decrypted = await withCtl({ keyfile_password: 'k3y-secret' });
    expect(decrypted.stderr).toBe('');
    expect(JSON.parse(decrypted.stdout)).toHaveLength(3);
    const wrong = await withCtl({ keyfile_password: 'wrong' });
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(
      /ctl\.keyfile: cannot load the client certificate's private key .*; is ctl\.keyfile_password right\?/,
    );
    expect(wrong.stderr).not.toContain('wrong');
    expect((await withCtl({})).stderr).toMatch(/is it encrypted\? set ctl\.keyfile_password/);
    const notText = await withCtl({ keyfile_password: ['k3y-secret'] });
    expect(notText.code).toBe(2);
    expect(notText.stderr).toContain('ctl.keyfile_password: must be a string');
    expect(notText.stderr).not.toContain('k3y-secret');
  });

  it('ctl.insecure as patronictl: without a client certificate the server certificate is not checked; with one its CA still is', async () => {
    const open = new FakeNode({});
    await open.start({ cert: readFileSync(certs.nodeCert), key: readFileSync(certs.nodeKey) });
    open.routes['GET /cluster'] = json(clusterDocument(open.url));
    try {
      const file = (ctl: Record<string, unknown>) => {
        const path = join(dir, 'insecure.yml');
        writeFileSync(
          path,
          stringify({
            scope: 'demo',
            restapi: { connect_address: open.url.replace('https://', ''), certfile: certs.nodeCert },
            ctl,
          }),
        );
        return path;
      };
      const insecure = await statorctl(['-c', file({ insecure: 'on' }), 'list', '--format', 'json']);
      expect(insecure.stderr).toBe('');
      expect(JSON.parse(insecure.stdout)).toHaveLength(3);
      const withCertificate = await statorctl([
        '-c',
        file({ insecure: true, certfile: certs.clientCert, keyfile: certs.clientKey }),
        'list',
      ]);
      expect(withCertificate.code).toBe(1);
      expect(withCertificate.stderr).toMatch(/self[- ]signed|unable to verify|UNABLE_TO_VERIFY/i);
      const bad = await statorctl(['-c', file({ insecure: 'maybe' }), 'list']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain(`ctl.insecure: must be a boolean (true/false, on/off, yes/no), got "maybe"`);
    } finally {
      await open.stop();
    }
  });

  it('names the key of a certificate file it cannot read', async () => {
    const file = join(dir, 'bad.yml');
    writeFileSync(
      file,
      stringify({
        scope: 'demo',
        restapi: { connect_address: '127.0.0.1:1' },
        ctl: { cacert: join(dir, 'missing.pem') },
      }),
    );
    const result = await statorctl(['-c', file, 'list']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`${file}: ctl.cacert: cannot read ${join(dir, 'missing.pem')}: ENOENT`);
  });
});
