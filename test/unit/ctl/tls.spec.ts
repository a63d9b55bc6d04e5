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
    await node.start({ cert: readFileSync(certs.nodeCert), key: readFileSync(certs.nodeKey), ca: readFileSync(certs.ca), requestCert: true, rejectUnauthorized: true });
    node.routes['GET /cluster'] = json(clusterDocument(node.url));
  });
  afterAll(async () => {
    await node.stop();
    removeDir(dir);
  });

  it('trusts the CA and presents the client certificate given by flags', async () => {
    const result = await statorctl(['--api', node.url, '--cacert', certs.ca, '--cert', certs.clientCert, '--key', certs.clientKey, 'list', '--format', 'json']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toHaveLength(3);
  });

  it('fails with exit code 1 and the reason when the server certificate is not trusted or no client certificate is sent', async () => {
    const untrusted = await statorctl(['--api', node.url, 'list']);
    expect(untrusted.code).toBe(1);
    expect(untrusted.stderr).toMatch(/^Error: no member of --api https:\/\/127\.0\.0\.1:\d+ answers: .*(SELF_SIGNED|UNABLE_TO_VERIFY|unable to verify|self-signed)/i);
    const noClientCertificate = await statorctl(['--api', node.url, '--insecure', 'list']);
    expect(noClientCertificate.code).toBe(1);
    expect(noClientCertificate.stderr).toMatch(/^Error: no member of /);
  });

  it("reads ctl.cacert, ctl.certfile, ctl.keyfile and restapi.connect_address from a patronictl configuration file", async () => {
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

  it('names the key of a certificate file it cannot read', async () => {
    const file = join(dir, 'bad.yml');
    writeFileSync(file, stringify({ scope: 'demo', restapi: { connect_address: '127.0.0.1:1' }, ctl: { cacert: join(dir, 'missing.pem') } }));
    const result = await statorctl(['-c', file, 'list']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`${file}: ctl.cacert: cannot read ${join(dir, 'missing.pem')}: ENOENT`);
  });
});
