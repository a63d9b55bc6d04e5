import { applyDecorators, Type } from '@nestjs/common';
import type { ReferenceObject, SchemaObject } from '@nestjs/swagger';
import { ApiExtraModels, ApiResponse, getSchemaPath } from '../openapi-decorators';
import { ErrorBodyDto } from '../dto/read-documents.dto';

/**
 * Decorators that describe the node API's answers in the OpenAPI document (`GET /openapi.json`),
 * so the controllers state their codes and bodies in one line each.
 */

export type Schema = Type<unknown> | SchemaObject;

const schemaOf = (schema: Schema): SchemaObject | ReferenceObject =>
  typeof schema === 'function' ? { $ref: getSchemaPath(schema) } : schema;
const models = (schemas: Schema[]) => schemas.filter((schema): schema is Type<unknown> => typeof schema === 'function');

/** A JSON answer of `status` with its schema. */
export function JsonAnswer(status: number, description: string, schema: Schema): MethodDecorator {
  return applyDecorators(
    ApiExtraModels(...models([schema])),
    ApiResponse({ status, description, content: { 'application/json': { schema: schemaOf(schema) } } }),
  );
}

/** A JSON array of `model`. */
export function JsonArrayAnswer(status: number, description: string, model: Type<unknown>): MethodDecorator {
  return applyDecorators(
    ApiExtraModels(model),
    ApiResponse({
      status,
      description,
      content: { 'application/json': { schema: { type: 'array', items: { $ref: getSchemaPath(model) } } } },
    }),
  );
}

/** A plain-text answer (`text/plain; charset=utf-8`): the operation endpoints' messages, as Patroni's. */
export function TextAnswer(
  status: number,
  description: string,
  headers?: Record<string, { description: string; schema: SchemaObject }>,
): MethodDecorator {
  return ApiResponse({
    status,
    description,
    ...(headers ? { headers } : {}),
    content: { 'text/plain': { schema: { type: 'string' }, example: description } },
  });
}

/** An answer with a status code and no body (OPTIONS, HEAD, the probes). */
export function EmptyAnswer(status: number, description: string): MethodDecorator {
  return ApiResponse({ status, description });
}

/** JSON error answers `{error, message, statusCode}`, each with what causes it. */
export function ErrorAnswers(...errors: [number, string][]): MethodDecorator {
  return applyDecorators(
    ApiExtraModels(ErrorBodyDto),
    ...errors.map(([status, description]) => JsonAnswer(status, description, ErrorBodyDto)),
  );
}

/**
 * A plain-text refusal (400) of an operation, which its body parser may also answer before it: then as
 * the JSON error body (not JSON, or not an object).
 */
export function TextRefusal(description: string): MethodDecorator {
  return applyDecorators(
    ApiExtraModels(ErrorBodyDto),
    ApiResponse({
      status: 400,
      description: `${description}; a body that is not JSON at all is refused in JSON`,
      content: {
        'text/plain': { schema: { type: 'string' }, example: description },
        'application/json': { schema: { $ref: getSchemaPath(ErrorBodyDto) } },
      },
    }),
  );
}

/** What any request with a body can be refused with, before the endpoint reads it (`plainText400`: see TextRefusal). */
export function BodyRefusals(limit = '1 MiB', plainText400?: string): MethodDecorator {
  if (plainText400 !== undefined) return applyDecorators(TextRefusal(plainText400), sizeAndType(limit));
  return applyDecorators(
    ErrorAnswers([400, 'The body is not JSON, or not a JSON object, or a key is refused (named in the message).']),
    sizeAndType(limit),
  );
}

function sizeAndType(limit: string): MethodDecorator {
  return ErrorAnswers(
    [413, `The body is larger than ${limit}.`],
    [
      415,
      'The Content-Type is not JSON (application/json, *+json, or the form type curl -d sends; none is read as JSON too).',
    ],
  );
}

/** `restapi.authentication` and `restapi.allowlist` on unsafe methods (and admin reads with `authentication_scope: admin`). */
export function AccessRefusals() {
  return applyDecorators(TextAnswer(401, 'no auth header received'), TextAnswer(403, 'Access is denied'));
}
