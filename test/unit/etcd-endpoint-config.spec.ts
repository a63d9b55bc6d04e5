import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { problemsOf } from '../helpers/config-problems';
import { etcd3ConfigLoader } from '../helpers/etcd3-config';

const load = etcd3ConfigLoader();
const tempDir = mkdtempSync(join(tmpdir(), 'stator-etcd-endpoint-'));
afterAll(() => rmSync(tempDir, { recursive: true, force: true }));

describe('etcd3.url and etcd3.proxy', () => {
  it('reads the endpoint, its protocol and default port from the URL', () => {
    expect(load({ url: 'https://etcd.example.com:2380' }).config.etcd3).toEqual({
      hosts: ['etcd.example.com:2380'],
      protocol: 'https',
    });
    expect(load({ url: 'http://10.0.0.5' }).config.etcd3).toEqual({ hosts: ['10.0.0.5:2379'], protocol: 'http' });
    expect(load({}, { PATRONI_ETCD3_URL: 'http://[::1]:2379' }).config.etcd3.hosts).toEqual(['[::1]:2379']);
  });

  it('takes a user from the URL, and never repeats its password in a message', () => {
    expect(load({ url: 'http://stator:p%40ss@etcd:2379' }).config.etcd3).toMatchObject({
      username: 'stator',
      password: 'p@ss',
    });
    const problems = problemsOf(() => load({ url: 'ftp://stator:hunter2@etcd' }));
    expect(problems).toEqual(['etcd3.url: must start with http:// or https://, got ftp://']);
    expect(problemsOf(() => load({ url: 'http://stator@etcd' }))).toEqual([
      'etcd3.url: names a user without a password (give user:password@, or use etcd3.username and etcd3.password)',
    ]);
  });

  it('prefers proxy over url over hosts, as Patroni does, and says what it ignored', () => {
    const { config, warnings } = load({
      proxy: 'http://grpc-proxy:23790',
      url: 'http://one:2379',
      hosts: ['two:2379'],
      protocol: 'https',
    });
    expect(config.etcd3).toEqual({ hosts: ['grpc-proxy:23790'], protocol: 'http' });
    expect(warnings).toEqual([
      'etcd3.hosts ignored: etcd3.proxy is set and wins',
      'etcd3.url ignored: etcd3.proxy is set and wins',
      'etcd3.protocol ignored: etcd3.proxy says http',
    ]);
  });

  it('refuses a URL with a path or that is no URL', () => {
    expect(problemsOf(() => load({ url: 'http://etcd:2379/v3' }))).toEqual([
      'etcd3.url: must be a URL without a path or query (https://host:port)',
    ]);
    expect(problemsOf(() => load({ proxy: 'http://' }))).toEqual([
      'etcd3.proxy: must be a URL such as https://etcd.example.com:2379',
    ]);
  });
});

describe('etcd3.key_password', () => {
  const { privateKey } = generateKeyPairSync('ec', {
    namedCurve: 'prime256v1',
    privateKeyEncoding: { type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'k3y-pass' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const keyFile = join(tempDir, 'client.key');
  beforeAll(() => writeFileSync(keyFile, privateKey));
  const tls = { hosts: ['etcd:2379'], protocol: 'https', cert: __filename, key: keyFile };

  it('keeps the passphrase that decrypts the key', () => {
    expect(load({ ...tls, key_password: 'k3y-pass' }).config.etcd3.keyPassword).toBe('k3y-pass');
    expect(load(tls, { PATRONI_ETCD3_KEY_PASSWORD: 'k3y-pass' }).config.etcd3.keyPassword).toBe('k3y-pass');
  });

  it('refuses a passphrase that does not decrypt the key, or no key, without repeating it', () => {
    expect(problemsOf(() => load({ ...tls, key_password: 'guess' }))).toEqual([
      `etcd3.key_password: does not decrypt the key in ${keyFile} (wrong passphrase, or not a PEM private key)`,
    ]);
    expect(problemsOf(() => load({ hosts: ['etcd:2379'], protocol: 'https', key_password: 'guess' }))).toEqual([
      'etcd3.key_password: requires etcd3.key (or etcd3.cert holding the key)',
    ]);
  });
});
