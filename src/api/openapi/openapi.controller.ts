import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Controller, Get, HttpException, HttpStatus, Inject, Injectable, INestApplication, Res } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyReply } from 'fastify';
import { errorBody } from '../http-exception.filter';
import { API_IDENTITY } from '../node-state.service';
import { ApiIdentity } from '../status-document';
import { EmptyAnswer, JsonAnswer } from './api-answers';
import { ApiOperation, ApiTags, OPENAPI_DECORATORS_LIVE } from '../openapi-decorators';
import type * as OpenApiDocumentBuilder from './openapi-document';

/** Where `npm run build` (scripts/build-openapi.ts) writes the document a product's agent serves. */
export function generatedDocumentPath(productKey: ApiIdentity['productKey'], directory = __dirname): string {
  return join(directory, `openapi-${productKey}.json`);
}

/**
 * The OpenAPI document, read on its first request (most agents are never asked) and kept as its JSON text: the
 * file `npm run build` generated, or, where the decorators are live (openapi-decorators.ts: the generator and the
 * tests), the document built from the application, which createHttpApp hands over once it exists.
 */
@Injectable()
export class OpenApiDocument {
  private app: INestApplication | null = null;
  private text: string | null = null;

  constructor(
    @Inject(API_IDENTITY) private readonly identity: ApiIdentity,
    adapterHost: HttpAdapterHost,
  ) {
    documents.set(adapterHost.httpAdapter, this);
  }

  attach(app: INestApplication): void {
    this.app = app;
  }

  json(): string {
    this.text ??= OPENAPI_DECORATORS_LIVE ? this.built() : this.generated();
    return this.text;
  }

  private built(): string {
    if (!this.app) throw unavailable('the API is not started yet');
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loads @nestjs/swagger: never in the agent
    const { buildOpenApiDocument } = require('./openapi-document') as typeof OpenApiDocumentBuilder;
    return JSON.stringify(buildOpenApiDocument(this.app, this.identity));
  }

  private generated(): string {
    try {
      return readFileSync(generatedDocumentPath(this.identity.productKey), 'utf8');
    } catch {
      throw unavailable('the OpenAPI document was not generated (npm run build generates it)');
    }
  }
}

function unavailable(message: string): HttpException {
  return new HttpException(errorBody(HttpStatus.SERVICE_UNAVAILABLE, message), HttpStatus.SERVICE_UNAVAILABLE);
}

/** Each application's document, by its HTTP adapter (app.get of a provider a composition lacks would end the process). */
const documents = new WeakMap<object, OpenApiDocument>();

/** Hands the application to its OpenApiDocument, when it serves one. */
export function attachOpenApiDocument(app: INestApplication): void {
  documents.get(app.getHttpAdapter())?.attach(app);
}

/** `GET /openapi.json`: this API as an OpenAPI 3.1 document (JSON only; no UI is served). */
@ApiTags('meta')
@Controller()
export class OpenApiController {
  constructor(private readonly document: OpenApiDocument) {}

  @Get('openapi.json')
  @ApiOperation({ summary: 'This API as an OpenAPI 3.1 document' })
  @JsonAnswer(200, 'This document: every route of this node with its codes and bodies.', {
    type: 'object',
    additionalProperties: true,
  })
  @EmptyAnswer(503, 'Asked before the API started, or the document was not generated.')
  get(@Res() reply: FastifyReply): void {
    void reply.code(HttpStatus.OK).type('application/json; charset=utf-8').send(this.document.json());
  }
}
