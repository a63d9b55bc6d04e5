import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { STATOR_VERSION } from '../../src/version';
import { makeTestCertificates } from '../helpers/test-certificates';

const AGENT = join(__dirname, '..', '..', 'bin', 'stator.js');

function stator(args: string[], env: Record<string, string> = {}) {
  // Only the variables given: the test must not pick up PATRONI_* settings of the machine.
  return spawnSync(process.execPath, [AGENT, ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', ...env },
    timeout: 20_000,
  });
}

describe('the stator command', () => {
  let dir: string;
  beforeAll(() => {
    dir = tmpDir('stator-cli-');
  });
  afterAll(() => removeDir(dir));

  /** A configuration from variables alone, pointing nowhere: enough to get past the loader. */
  const minimalEnvironment = () => ({
    PATRONI_SCOPE: 'demo',
    PATRONI_NAME: 'n1',
    PATRONI_RESTAPI_LISTEN: '127.0.0.1:1',
    PATRONI_ETCD3_HOSTS: '127.0.0.1:2',
    PATRONI_POSTGRESQL_LISTEN: '127.0.0.1:3',
    PATRONI_POSTGRESQL_DATA_DIR: join(dir, 'data'),
  });

  it('prints its version', () => {
    const result = stator(['--version']);
    expect(result.status).toBe(0);
    expect(result.stdout).toBe(`stator ${STATOR_VERSION}\n`);
  });

  it('refuses a bad configuration with one line per problem, naming the key and the rule', () => {
    const file = join(dir, 'bad.yml');
    writeFileSync(file, 'scope: demo\nname: n1\nrestapi:\n  listen: nowhere\nbootstrap:\n  dcs:\n    ttl: soon\n');
    const result = stator([file]);
    expect(result.status).toBe(1);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^restapi\.listen: .*host:port.*"nowhere"/),
        expect.stringMatching(/^bootstrap\.dcs\.ttl: .*integer/),
        expect.stringMatching(/^postgresql\.data_dir: required/),
        expect.stringMatching(/^etcd3\.hosts: required/),
      ]),
    );
  });

  it('refuses an etcd TLS file it cannot read, naming the key', () => {
    const result = stator([], {
      ...minimalEnvironment(),
      PATRONI_ETCD3_PROTOCOL: 'https',
      PATRONI_ETCD3_CACERT: join(dir, 'missing-ca.pem'),
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(`etcd3.cacert: cannot read ${join(dir, 'missing-ca.pem')}`);
  });

  it('refuses an encrypted API key with the wrong keyfile_password in one line naming the key', () => {
    const certs = makeTestCertificates(dir);
    const encryptedKey = join(dir, 'node-encrypted.key');
    execFileSync('openssl', ['pkey', '-in', certs.nodeKey, '-aes256', '-passout', 'pass:right', '-out', encryptedKey], {
      stdio: 'pipe',
    });
    const result = stator([], {
      ...minimalEnvironment(),
      PATRONI_RESTAPI_CERTFILE: certs.nodeCert,
      PATRONI_RESTAPI_KEYFILE: encryptedKey,
      PATRONI_RESTAPI_KEYFILE_PASSWORD: 'wrong',
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(
      /^restapi\.keyfile: cannot load the private key \(.*\); is restapi\.keyfile_password right\?\n$/,
    );
  });

  it('refuses an encrypted ctl key with the wrong ctl.keyfile_password in one line naming the key, before anything starts', () => {
    const certs = makeTestCertificates(dir);
    const encryptedKey = join(dir, 'client-encrypted.key');
    execFileSync(
      'openssl',
      ['pkey', '-in', certs.clientKey, '-aes256', '-passout', 'pass:right', '-out', encryptedKey],
      { stdio: 'pipe' },
    );
    const result = stator([], {
      ...minimalEnvironment(),
      PATRONI_CTL_CERTFILE: certs.clientCert,
      PATRONI_CTL_KEYFILE: encryptedKey,
      PATRONI_CTL_KEYFILE_PASSWORD: 'wrong',
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(
      /^ctl\.keyfile: cannot load the client certificate's private key \(.*\); is ctl\.keyfile_password right\?\n$/,
    );
  });

  it('validates a configuration without starting: --validate-config exits 0 or 1, --print shows it with passwords hidden', () => {
    const good = join(dir, 'good.yml');
    writeFileSync(
      good,
      'scope: demo\nname: n1\nrestapi:\n  listen: 127.0.0.1:1\netcd3:\n  hosts: 127.0.0.1:2\npostgresql:\n  listen: 127.0.0.1:3\n  data_dir: /nowhere\n',
    );
    const valid = stator(['--validate-config', good]);
    expect({ status: valid.status, stdout: valid.stdout, stderr: valid.stderr }).toEqual({
      status: 0,
      stdout: '',
      stderr: '',
    });
    const printed = stator(['--validate-config', '--print', good], { PATRONI_SUPERUSER_PASSWORD: 'sup3r' });
    expect(printed.status).toBe(0);
    expect(printed.stdout).toContain('scope: demo\n');
    expect(printed.stdout).toMatch(/superuser:\n\s+password: "?\*{8}"?\n/);
    expect(printed.stdout).not.toContain('sup3r');
    const bad = join(dir, 'bad-listen.yml');
    writeFileSync(
      bad,
      'scope: demo\nname: n1\nrestapi:\n  listen: nowhere\netcd3:\n  hosts: 127.0.0.1:2\npostgresql:\n  listen: 127.0.0.1:3\n  data_dir: /nowhere\n',
    );
    const invalid = stator(['--validate-config', bad]);
    expect({ status: invalid.status, stdout: invalid.stdout, stderr: invalid.stderr }).toEqual({
      status: 1,
      stdout: '',
      stderr: 'restapi.listen: must be host:port, got "nowhere"\n',
    });
  });

  it('lists --validate-config in its usage', () => {
    const result = stator(['--help']);
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('stator --validate-config [--print|-p] [--ignore-listen-port|-i] [<config.yml>]');
  });
});
