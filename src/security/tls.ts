import { readFileSync } from 'node:fs';
import type { AgentOptions, ServerOptions } from 'node:https';
import { RestApiConfig } from '../config/config.types';

/**
 * The HTTPS options of the API server, or `null` to serve plain HTTP (no `certfile`). `verify_client: optional` asks
 * for a client certificate without requiring one (the access checks then refuse unsafe requests without a verified
 * one); `required` makes the handshake fail without a certificate issued by `cafile`, for every endpoint.
 */
export function httpsServerOptions(restapi: RestApiConfig): ServerOptions | null {
  if (!restapi.certfile) return null;
  const verifyClient = restapi.verify_client ?? 'none';
  return {
    ...certificateAndKey(restapi.certfile, restapi.keyfile),
    ...(restapi.cafile ? { ca: readPem('cafile', restapi.cafile) } : {}),
    requestCert: verifyClient !== 'none',
    rejectUnauthorized: verifyClient === 'required',
  };
}

/**
 * TLS options for calls to other members' APIs: trust `cafile` (the system CAs without it), and present this node's
 * certificate when the members ask for one (`verify_client` optional or required; all members share the setting).
 */
export function peerTlsOptions(restapi: RestApiConfig): AgentOptions {
  const asksForCertificate = restapi.verify_client === 'optional' || restapi.verify_client === 'required';
  return {
    ...(restapi.cafile ? { ca: readPem('cafile', restapi.cafile) } : {}),
    ...(restapi.certfile && asksForCertificate ? certificateAndKey(restapi.certfile, restapi.keyfile) : {}),
  };
}

/** As in the reference, the key may live in the certificate file when `keyfile` is not set. */
function certificateAndKey(certfile: string, keyfile: string | undefined): { cert: Buffer; key: Buffer } {
  return { cert: readPem('certfile', certfile), key: keyfile ? readPem('keyfile', keyfile) : readPem('certfile', certfile) };
}

/** Reads a PEM file named by a `restapi` key; the error names the key, as configuration errors do. */
function readPem(key: 'certfile' | 'keyfile' | 'cafile', path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new Error(`restapi.${key}: cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
}
