import { Controller, Get, HttpException, HttpStatus, Inject, Injectable, INestApplication, Res } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { errorBody } from '../http-exception.filter';
import { API_IDENTITY } from '../node-state.service';
import { ApiIdentity } from '../status-document';
import { EmptyAnswer, JsonAnswer } from './api-answers';
import { buildOpenApiDocument } from './openapi-document';

/**
 * The OpenAPI document, built on its first request (not at start: most agents are never asked) and
 * kept as its JSON text. It scans the application, which createHttpApp hands over once it exists.
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
    if (this.text === null) {
      if (!this.app)
        throw new HttpException(
          errorBody(HttpStatus.SERVICE_UNAVAILABLE, 'the API is not started yet'),
          HttpStatus.SERVICE_UNAVAILABLE,
        );
      this.text = JSON.stringify(buildOpenApiDocument(this.app, this.identity));
    }
    return this.text;
  }
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
  @EmptyAnswer(503, 'Asked before the API started.')
  get(@Res() reply: FastifyReply): void {
    void reply.code(HttpStatus.OK).type('application/json; charset=utf-8').send(this.document.json());
  }
}
