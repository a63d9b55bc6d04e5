import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** PEM file paths of a throwaway PKI made with openssl: a CA, certificates it issued, and a stranger's. */
export interface TestCertificates {
  ca: string;
  /** For 127.0.0.1 and localhost; also usable as a client certificate. */
  nodeCert: string;
  nodeKey: string;
  clientCert: string;
  clientKey: string;
  /** Issued by another CA. */
  strangerCert: string;
  strangerKey: string;
}

/** Writes the files into `dir` (ECDSA P-256, valid one day). */
export function makeTestCertificates(dir: string): TestCertificates {
  const path = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  const newKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const caExtensions = [
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ];
  const selfSignedCa = (name: string) =>
    openssl(
      'req',
      '-x509',
      ...newKey,
      ...caExtensions,
      '-keyout',
      path(`${name}.key`),
      '-out',
      path(`${name}.crt`),
      '-days',
      '1',
      '-subj',
      `/CN=${name}`,
    );
  const issue = (name: string, ca: string, extensions: string) => {
    writeFileSync(path(`${name}.ext`), `${extensions}\n`);
    openssl(
      'req',
      '-new',
      ...newKey,
      '-keyout',
      path(`${name}.key`),
      '-out',
      path(`${name}.csr`),
      '-subj',
      `/CN=${name}`,
    );
    const issuer = ['-CA', path(`${ca}.crt`), '-CAkey', path(`${ca}.key`), '-CAcreateserial'];
    openssl(
      'x509',
      '-req',
      '-in',
      path(`${name}.csr`),
      ...issuer,
      '-out',
      path(`${name}.crt`),
      '-days',
      '1',
      '-extfile',
      path(`${name}.ext`),
    );
  };
  selfSignedCa('ca');
  selfSignedCa('stranger-ca');
  issue('node', 'ca', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth');
  issue('client', 'ca', 'extendedKeyUsage=clientAuth');
  issue('stranger', 'stranger-ca', 'extendedKeyUsage=clientAuth');
  return {
    ca: path('ca.crt'),
    nodeCert: path('node.crt'),
    nodeKey: path('node.key'),
    clientCert: path('client.crt'),
    clientKey: path('client.key'),
    strangerCert: path('stranger.crt'),
    strangerKey: path('stranger.key'),
  };
}
