import { STATUS_CODES } from 'node:http';
import {
  ArgumentsHost,
  Catch,
  ExceptionFilter,
  HttpException,
  HttpStatus,
  Inject,
  Logger,
  NotFoundException,
  Optional,
} from '@nestjs/common';
import { logException, Logger as NodeLogger } from '../common/logger';
import { LOGGER } from '../common/tokens';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** The JSON error body of every API error that is not a plain-text message. */
export interface ErrorBody {
  error: string;
  message: string | string[];
  statusCode: number;
}

/** `{"error":"Service Unavailable","message":...,"statusCode":503}`: the reason phrase, the explanation, the code. */
export function errorBody(statusCode: number, message: string | string[]): ErrorBody {
  return { error: STATUS_CODES[statusCode] ?? 'Error', message, statusCode };
}

const ROUTE_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/** Fastify's own error of each failed request, as raised (Nest hands the filter a copy without its code). */
const fastifyErrorOf = new WeakMap<FastifyRequest, Error>();

/**
 * Keeps Fastify's own request errors (body size, media type, JSON...) for the filter: Nest turns them
 * into an HttpException with Fastify's message alone, which would otherwise reach clients as is.
 * Must be installed before the application is ready.
 */
export function captureFastifyErrors(fastify: FastifyInstance): void {
  fastify.addHook('onError', async (request, _reply, error) => {
    if (typeof (error as { code?: unknown }).code === 'string') fastifyErrorOf.set(request, error);
  });
}

/** What the API says about Fastify's own request errors: the rule that was broken, in words. */
const FASTIFY_ERRORS: Record<string, (request: FastifyRequest) => { status: number; message: string }> = {
  FST_ERR_CTP_BODY_TOO_LARGE: (request) => ({
    status: HttpStatus.PAYLOAD_TOO_LARGE,
    message: `request body too large: the limit is ${request.routeOptions?.bodyLimit ?? request.server.initialConfig.bodyLimit} bytes`,
  }),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: (request) => ({
    status: HttpStatus.UNSUPPORTED_MEDIA_TYPE,
    message: `Content-Type ${request.headers['content-type'] ?? '(none)'} is not accepted: request bodies are JSON (application/json)`,
  }),
  FST_ERR_CTP_EMPTY_JSON_BODY: () => ({
    status: HttpStatus.BAD_REQUEST,
    message: 'request body is empty but Content-Type is application/json: send a JSON object',
  }),
  FST_ERR_CTP_INVALID_JSON_BODY: () => ({ status: HttpStatus.BAD_REQUEST, message: 'request body is not valid JSON' }),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => ({
    status: HttpStatus.BAD_REQUEST,
    message: 'request body size does not match its Content-Length header',
  }),
};

/**
 * The API's wire format for errors, installed globally:
 * - an `HttpException` whose response is a string answers that string as `text/plain; charset=utf-8`
 *   with its status (the operation endpoints' messages, as Patroni's);
 * - a request for a path no route serves answers 404, and a known path with a method it does not
 *   serve answers 405 with an `Allow` header (the reference answers unknown paths with 503);
 * - Fastify's body errors (size, media type, JSON) answer their 4xx with a message naming the rule;
 * - everything else answers JSON `{error, message, statusCode}`; an unexpected error is a logged 500.
 */
@Catch()
export class HttpExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('api');

  /** `nodeLogger`: the agent's own, which honours `log.traceback_level`; absent when the API runs without a node. */
  constructor(@Optional() @Inject(LOGGER) private readonly nodeLogger?: NodeLogger) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const request = http.getRequest<FastifyRequest>();
    const reply = http.getResponse<FastifyReply>();

    if (exception instanceof NotFoundException && !this.routeExists(request, request.method)) {
      this.answerUnrouted(request, reply);
      return;
    }
    const fastifyError = fastifyRequestError(fastifyErrorOf.get(request) ?? exception, request);
    if (fastifyError) {
      void reply.code(fastifyError.status).send(errorBody(fastifyError.status, fastifyError.message));
      return;
    }
    if (exception instanceof HttpException) {
      const response = exception.getResponse();
      if (typeof response === 'string') {
        void reply.code(exception.getStatus()).type('text/plain; charset=utf-8').send(response);
        return;
      }
      void reply.code(exception.getStatus()).send(normalizedBody(exception.getStatus(), response));
      return;
    }
    const failure = `${request.method} ${request.url} failed`;
    if (this.nodeLogger) logException(this.nodeLogger, failure, exception);
    else
      this.logger.error(
        `${failure}: ${exception instanceof Error ? (exception.stack ?? exception.message) : String(exception)}`,
      );
    void reply
      .code(HttpStatus.INTERNAL_SERVER_ERROR)
      .send(errorBody(HttpStatus.INTERNAL_SERVER_ERROR, 'internal error; see the node log'));
  }

  /** 405 with the methods the path serves, or 404 when no route serves the path at all. */
  private answerUnrouted(request: FastifyRequest, reply: FastifyReply): void {
    const path = request.url.split('?')[0];
    const allowed = ROUTE_METHODS.filter((method) => this.routeExists(request, method));
    if (allowed.length > 0) {
      void reply
        .code(HttpStatus.METHOD_NOT_ALLOWED)
        .header('Allow', allowed.join(', '))
        .send(
          errorBody(
            HttpStatus.METHOD_NOT_ALLOWED,
            `${request.method} is not allowed on ${path}; allowed: ${allowed.join(', ')}`,
          ),
        );
      return;
    }
    void reply.code(HttpStatus.NOT_FOUND).send(errorBody(HttpStatus.NOT_FOUND, `no endpoint at ${path}`));
  }

  /** Whether a route serves the request's path with `method` (a trailing slash is tolerated, as the router does). */
  private routeExists(request: FastifyRequest, method: string): boolean {
    const path = request.url.split('?')[0];
    const url = path.length > 1 ? path.replace(/\/+$/, '') || '/' : path;
    return request.server.hasRoute({ url, method: method as (typeof ROUTE_METHODS)[number] });
  }
}

/** Nest's own exception bodies (`{message, error, statusCode}`) in the API's key order; other objects as they are. */
function normalizedBody(status: number, response: object): object {
  const { message, error, problems } = response as { message?: unknown; error?: unknown; problems?: unknown };
  if (typeof message !== 'string' && !Array.isArray(message)) return response;
  return {
    ...errorBody(status, message as string | string[]),
    ...(typeof error === 'string' ? { error } : {}),
    // One entry per refused key, for clients that show them separately.
    ...(Array.isArray(problems) ? { problems } : {}),
  };
}

/** A Fastify request error (known code, or any error carrying a 4xx `statusCode`) as status and message. */
function fastifyRequestError(exception: unknown, request: FastifyRequest): { status: number; message: string } | null {
  if (!(exception instanceof Error)) return null;
  const { code, statusCode } = exception as Error & { code?: string; statusCode?: number };
  const known = code ? FASTIFY_ERRORS[code] : undefined;
  if (known) return known(request);
  if (typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500)
    return { status: statusCode, message: exception.message };
  return null;
}
