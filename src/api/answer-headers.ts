import type { FastifyInstance } from 'fastify';
import { RestApiConfig, StatorConfig } from '../config/config.types';
import { PATRONI_REFERENCE_VERSION, STATOR_VERSION } from '../version';

/**
 * The headers every answer carries by configuration: `restapi.http_extra_headers`, and over HTTPS also
 * `https_extra_headers` (merged over them, as the reference does), and the `Server` header `server_tokens` asks for.
 */
export function answerHeaders(restapi: RestApiConfig, compat: StatorConfig['compat']): Record<string, string> {
  const headers: Record<string, string> = {
    ...restapi.http_extra_headers,
    ...(restapi.certfile ? restapi.https_extra_headers : {}),
  };
  const server = serverHeader(restapi.server_tokens ?? 'original', compat);
  if (server) headers.server = server;
  return headers;
}

/**
 * `productonly`: the product's name; `minimal`: name and version (with `compat: patroni`, Patroni and the release
 * Stator implements, as peers and tools read them). `original`: no Server header, Stator's behaviour before the
 * setting existed (the reference's original is Python's `BaseHTTP/0.6 Python/3.x`, which Stator is not).
 */
export function serverHeader(
  tokens: NonNullable<RestApiConfig['server_tokens']>,
  compat: StatorConfig['compat'],
): string | null {
  const [product, version] = compat === 'patroni' ? ['Patroni', PATRONI_REFERENCE_VERSION] : ['Stator', STATOR_VERSION];
  if (tokens === 'productonly') return product;
  if (tokens === 'minimal') return `${product}/${version}`;
  return null;
}

/** Sets `headers` on every answer before any route, check or error handler runs, so refusals carry them too. */
export function installAnswerHeaders(fastify: FastifyInstance, headers: Record<string, string>): void {
  if (Object.keys(headers).length === 0) return;
  // A callback hook, not an async one: every request (health checks too) would pay for a promise.
  fastify.addHook('onRequest', (_request, reply, done) => {
    void reply.headers(headers);
    done();
  });
}
