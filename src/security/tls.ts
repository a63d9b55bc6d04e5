import { readFileSync } from 'node:fs';
import type { AgentOptions, ServerOptions } from 'node:https';
import { createSecureContext } from 'node:tls';
import { RestApiConfig } from '../config/config.types';
import { CtlConfig } from '../config/ctl-config';
import { errorText } from '../common/error-text';

/**
 * The HTTPS options of the API server, or `null` to serve plain HTTP (no `certfile`). `verify_client: optional` asks
 * for a client certificate without requiring one (the access checks then refuse unsafe requests without a verified
 * one); `required` makes the handshake fail without a certificate issued by `cafile`, for every endpoint.
 */
export function httpsServerOptions(restapi: RestApiConfig): ServerOptions | null {
  if (!restapi.certfile) return null;
  const verifyClient = restapi.verify_client ?? 'none';
  const options: ServerOptions = {
    ...certificateAndKey(restapi.certfile, restapi.keyfile),
    ...(restapi.keyfile_password !== undefined ? { passphrase: restapi.keyfile_password } : {}),
    ...(restapi.cafile ? { ca: readPem('cafile', restapi.cafile) } : {}),
    ...(restapi.ciphers ? { ciphers: restapi.ciphers } : {}),
    requestCert: verifyClient !== 'none',
    rejectUnauthorized: verifyClient === 'required',
  };
  checkSecureContext(options, restapi);
  return options;
}

/**
 * Builds the TLS context once, as the server will, so that a wrong passphrase or a cipher list OpenSSL cannot use is
 * an error naming the key rather than OpenSSL's words from deep inside the server's start.
 */
function checkSecureContext(options: ServerOptions, restapi: RestApiConfig): void {
  try {
    createSecureContext(options);
  } catch (error) {
    const text = errorText(error);
    if (/cipher/i.test(text) && restapi.ciphers)
      throw new Error(`restapi.ciphers: OpenSSL accepts none of "${restapi.ciphers}" (${text})`, { cause: error });
    if (/decrypt|passphrase|PEM|key/i.test(text)) {
      const hint =
        restapi.keyfile_password === undefined
          ? 'is it encrypted? set restapi.keyfile_password'
          : 'is restapi.keyfile_password right?';
      throw new Error(`restapi.keyfile: cannot load the private key (${text}); ${hint}`, { cause: error });
    }
    throw new Error(`restapi.certfile: cannot use the certificate (${text})`, { cause: error });
  }
}

/**
 * TLS options for calls to other members' APIs: trust `cafile` (the system CAs without it), and present this node's
 * certificate when the members ask for one (`verify_client` optional or required; all members share the setting).
 */
export function peerTlsOptions(restapi: RestApiConfig, ctl: CtlConfig = {}): AgentOptions {
  const ca = ctl.cacert
    ? { ca: readPem('ctl.cacert', ctl.cacert) }
    : restapi.cafile
      ? { ca: readPem('cafile', restapi.cafile) }
      : {};
  if (ctl.certfile) {
    // As Patroni's agent: `ctl.certfile` is the client certificate it shows the other members, asked for or not.
    const options: AgentOptions = {
      ...ca,
      cert: readPem('ctl.certfile', ctl.certfile),
      key: readPem(ctl.keyfile ? 'ctl.keyfile' : 'ctl.certfile', ctl.keyfile ?? ctl.certfile),
      ...(ctl.keyfile_password !== undefined ? { passphrase: ctl.keyfile_password } : {}),
    };
    checkClientKey(options, ctl);
    return options;
  }
  const asksForCertificate = restapi.verify_client === 'optional' || restapi.verify_client === 'required';
  return {
    ...ca,
    ...(restapi.certfile && asksForCertificate ? certificateAndKey(restapi.certfile, restapi.keyfile) : {}),
    ...(restapi.certfile && asksForCertificate && restapi.keyfile_password !== undefined
      ? { passphrase: restapi.keyfile_password }
      : {}),
  };
}

/** A client key that cannot be loaded (encrypted without, or with a wrong, `ctl.keyfile_password`) is said at start, naming the key. */
function checkClientKey(options: AgentOptions, ctl: CtlConfig): void {
  try {
    createSecureContext(options);
  } catch (error) {
    const text = errorText(error);
    const hint =
      ctl.keyfile_password === undefined
        ? 'is it encrypted? set ctl.keyfile_password'
        : 'is ctl.keyfile_password right?';
    throw new Error(
      `${ctl.keyfile ? 'ctl.keyfile' : 'ctl.certfile'}: cannot load the client certificate's private key (${text}); ${hint}`,
      { cause: error },
    );
  }
}

/** As in the reference, the key may live in the certificate file when `keyfile` is not set. */
function certificateAndKey(certfile: string, keyfile: string | undefined): { cert: Buffer; key: Buffer } {
  return {
    cert: readPem('certfile', certfile),
    key: keyfile ? readPem('keyfile', keyfile) : readPem('certfile', certfile),
  };
}

/** Reads a PEM file named by a `restapi` key; the error names the key, as configuration errors do. */
function readPem(
  key: 'certfile' | 'keyfile' | 'cafile' | `ctl.${'cacert' | 'certfile' | 'keyfile'}`,
  path: string,
): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new Error(`${key.startsWith('ctl.') ? key : `restapi.${key}`}: cannot read ${path}: ${errorText(error)}`, {
      cause: error,
    });
  }
}
