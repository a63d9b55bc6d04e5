import 'reflect-metadata';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { DynamicModule, HttpException, HttpStatus } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import type { ConnectionError, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createLogger } from '../common/logger';
import { guardConnections, MAX_CONNECTIONS } from './connection-guard';
import { captureFastifyErrors, errorBody } from './http-exception.filter';
import { attachOpenApiDocument } from './openapi/openapi.controller';
import { ApiSecurityConfig, installApiSecurity } from './security/api-security';
import { answerHeaders, installAnswerHeaders } from './answer-headers';
import type { MemberApiUrls } from '../security/member-allowlist';
import { httpsServerOptions } from '../security/tls';

/** Requests larger than this are refused with 413 (the reference has no limit). */
export const BODY_LIMIT_BYTES = 1024 * 1024;

/** `/config` bodies larger than this are refused with 413: every accepted change is stored in etcd and announced to every node. */
export const CONFIG_BODY_LIMIT_BYTES = 64 * 1024;

/**
 * Connection timeouts: a new connection gets HEADERS_TIMEOUT_MS to send its headers and
 * REQUEST_TIMEOUT_MS for its whole request, each enforced by guardConnections within
 * CONNECTION_CHECK_INTERVAL_MS of being reached; an idle keep-alive connection is closed by Node after
 * KEEP_ALIVE_TIMEOUT_MS. Node's own headers and request timeouts are not used: its checker runs on a
 * timer for as long as the server listens (every 30 s by default, so a 10 s timeout fired after up
 * to 40 s; at 250 ms it woke an idle agent four times a second).
 */
export const HEADERS_TIMEOUT_MS = 4_000;
export const REQUEST_TIMEOUT_MS = 5_000;
export const KEEP_ALIVE_TIMEOUT_MS = 5_000;
const CONNECTION_CHECK_INTERVAL_MS = 250;
/** The longest interval a Node timer takes (2^31 - 1 ms, 24.8 days). */
const NODE_CONNECTION_CHECK_NEVER_MS = 2 ** 31 - 1;

/**
 * Creates the Nest application on Fastify: HTTP/1.1 keep-alive, Content-Length on every answer,
 * bounded request time, and request bodies read as JSON by `acceptJsonBodies`. With `api` (the node's `restapi` and
 * `compat`): HTTPS when `restapi.certfile` is set, the configured answer headers, and the access checks of the unsafe
 * requests.
 */
export interface HttpAppOptions {
  /** The members' `api_url`, for `allowlist_include_members`. */
  memberApiUrls?: MemberApiUrls;
  /** Where the access checks report what they cannot use (an allowlist entry, a member host that does not resolve). */
  warn?: (message: string) => void;
}

export async function createHttpApp(
  module: DynamicModule,
  api?: ApiSecurityConfig,
  options: HttpAppOptions = {},
): Promise<NestFastifyApplication> {
  const https = api ? httpsServerOptions(api.restapi) : null;
  // guardConnections enforces the headers and request timeouts; Node's own checker never runs.
  const timeouts = { connectionsCheckingInterval: NODE_CONNECTION_CHECK_NEVER_MS };
  const adapter = new FastifyAdapter({
    ...(https ? { https: { ...https, ...timeouts, handshakeTimeout: HEADERS_TIMEOUT_MS } } : { http: timeouts }),
    bodyLimit: BODY_LIMIT_BYTES,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    routerOptions: { ignoreTrailingSlash: true },
    clientErrorHandler: answerClientError,
    // A URL the router cannot decode (`/%zz`) is answered before any route or filter: same JSON shape as every error.
    frameworkErrors: (error: FastifyError, _request: FastifyRequest, reply: FastifyReply) => {
      void reply
        .code(HttpStatus.BAD_REQUEST)
        .send(errorBody(HttpStatus.BAD_REQUEST, `the URL is not valid: ${error.message}`));
    },
  });
  acceptJsonBodies(adapter.getInstance());
  limitConfigBodies(adapter.getInstance());
  captureFastifyErrors(adapter.getInstance());
  guardConnections(adapter.getInstance().server, {
    maxConnections: MAX_CONNECTIONS,
    firstRequestTimeoutMs: HEADERS_TIMEOUT_MS,
    headersTimeoutMs: HEADERS_TIMEOUT_MS,
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
    checkIntervalMs: CONNECTION_CHECK_INTERVAL_MS,
  });
  if (api) installAnswerHeaders(adapter.getInstance(), answerHeaders(api.restapi, api.compat));
  if (api)
    await installApiSecurity(adapter.getInstance(), api, options.warn ?? createLogger().warning, options.memberApiUrls);
  // bodyParser: false keeps Nest from installing its own JSON and form parsers over ours.
  const app = await NestFactory.create<NestFastifyApplication>(module, adapter, {
    logger: ['error', 'warn'],
    bodyParser: false,
  });
  attachOpenApiDocument(app);
  return app;
}

/**
 * Media types read as JSON. patronictl sends its JSON bodies with no Content-Type, and `curl -d`
 * (Patroni's documented examples) with the form type, so both are read as JSON as the reference does.
 */
const MAX_MEDIA_TYPE_LENGTH = 127;
const JSON_MEDIA_TYPE = /^(application\/(json|[\w.+-]+\+json|x-www-form-urlencoded))?$/;

/**
 * Replaces Fastify's body parsers by one: a body is a JSON object, or empty (then `request.body` is
 * undefined and the endpoint decides whether it needed one). Any other media type → 415; text that
 * is not JSON, or JSON that is not an object → 400; over BODY_LIMIT_BYTES → 413 (Fastify's check).
 */
export function acceptJsonBodies(fastify: FastifyInstance): void {
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', { parseAs: 'string' }, (request: FastifyRequest, body: string | Buffer, done) => {
    const mediaType = (request.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
    if (mediaType.length > MAX_MEDIA_TYPE_LENGTH || !JSON_MEDIA_TYPE.test(mediaType)) {
      done(
        refusal(
          HttpStatus.UNSUPPORTED_MEDIA_TYPE,
          `Content-Type ${mediaType.slice(0, 64)} is not accepted: request bodies are JSON (application/json)`,
        ),
        undefined,
      );
      return;
    }
    const text = body.toString();
    if (isConfigRoute(request) && Buffer.byteLength(text) > CONFIG_BODY_LIMIT_BYTES) {
      done(configBodyTooLarge(), undefined);
      return;
    }
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text, rejectPrototypeKeys);
    } catch (error) {
      done(refusal(HttpStatus.BAD_REQUEST, `request body is not valid JSON: ${(error as Error).message}`), undefined);
      return;
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      const kind = Array.isArray(parsed) ? 'an array' : parsed === null ? 'null' : `a ${typeof parsed}`;
      done(refusal(HttpStatus.BAD_REQUEST, `request body must be a JSON object, got ${kind}`), undefined);
      return;
    }
    done(null, parsed);
  });
}

/**
 * `/config` bodies over CONFIG_BODY_LIMIT_BYTES get 413: at once when Content-Length says so (before
 * the body is read), else once it is read (chunked uploads; see acceptJsonBodies).
 */
function limitConfigBodies(fastify: FastifyInstance): void {
  // A callback hook, not an async one: every request (health checks too) would pay for a promise.
  fastify.addHook('onRequest', (request, _reply, done) => {
    // The length first: Fastify builds a new object for every read of routeOptions, and health checks send no body.
    done(
      Number(request.headers['content-length'] ?? 0) > CONFIG_BODY_LIMIT_BYTES && isConfigRoute(request)
        ? configBodyTooLarge()
        : undefined,
    );
  });
}

const isConfigRoute = (request: FastifyRequest) => request.routeOptions.url === '/config';

function configBodyTooLarge(): HttpException {
  return refusal(HttpStatus.PAYLOAD_TOO_LARGE, `a /config body must be at most ${CONFIG_BODY_LIMIT_BYTES} bytes`);
}

const CLIENT_ERRORS: Readonly<Record<string, [number, string]>> = Object.freeze({
  ERR_HTTP_REQUEST_TIMEOUT: [HttpStatus.REQUEST_TIMEOUT, 'the request was not received in time'],
  HPE_HEADER_OVERFLOW: [431, 'the request line and headers exceed 16 KiB'],
});

/**
 * A request Node could not read (timeout, oversized headers, malformed HTTP) is answered in the JSON
 * shape of every error and the connection closed, as Fastify does, except that an answer to a HEAD
 * request carries no body: the client would read the body as the start of another response.
 */
function answerClientError(error: ConnectionError, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, message] = (Object.hasOwn(CLIENT_ERRORS, error.code) ? CLIENT_ERRORS[error.code] : null) ?? [
    HttpStatus.BAD_REQUEST,
    'the request is not valid HTTP/1.1',
  ];
  const body = JSON.stringify(errorBody(status, message));
  // A Buffer at run time, whatever Fastify's types say.
  const raw = error.rawPacket as unknown as Buffer | undefined;
  const head = Buffer.isBuffer(raw) && raw.subarray(0, 5).toString('latin1') === 'HEAD ';
  if (socket.writable) {
    const reason = STATUS_CODES[status] ?? '';
    socket.write(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n${head ? '' : body}`,
    );
  }
  socket.destroy(error);
}

/** A `__proto__` key could reach an object's prototype when bodies are merged into documents. */
function rejectPrototypeKeys(key: string, value: unknown): unknown {
  if (key === '__proto__') throw new SyntaxError('the key "__proto__" is not allowed');
  return value;
}

function refusal(status: number, message: string): HttpException {
  return new HttpException(errorBody(status, message), status);
}

/** `host:port` → its parts; `*` and empty host mean every interface. */
export function splitListen(listen: string): { host: string; port: number } {
  const at = listen.lastIndexOf(':');
  const host = listen.slice(0, at).replace(/^\[|\]$/g, '');
  return { host: host === '*' || host === '' ? '0.0.0.0' : host, port: Number(listen.slice(at + 1)) };
}
