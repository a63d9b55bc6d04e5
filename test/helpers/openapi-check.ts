import { Validator } from '@seriousme/openapi-schema-validator';
import Ajv2020 from 'ajv/dist/2020';

/** Checks of the node's OpenAPI document (`GET /openapi.json`), shared by the unit and integration tests. */

type Json = Record<string, unknown>;
export const METHODS = ['get', 'head', 'options', 'post', 'put', 'patch', 'delete'] as const;

/** The document against the OpenAPI 3.1 schema (@seriousme/openapi-schema-validator, offline). */
export async function validateOpenApi(document: Json): Promise<{ valid: boolean; version: string; errors?: unknown }> {
  const validator = new Validator();
  const result = await validator.validate(document);
  return { valid: result.valid, version: validator.version, errors: result.errors };
}

/** `GET /stator`, ... : every operation of the document. */
export function documentedOperations(document: Json): string[] {
  const operations: string[] = [];
  for (const [path, item] of Object.entries(document.paths as Record<string, Json>)) {
    for (const method of METHODS) if (item[method]) operations.push(`${method.toUpperCase()} ${path}`);
  }
  return operations.sort();
}

/** Fastify's `/ui/assets/:name` is OpenAPI's `/ui/assets/{name}`. */
export function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

const pointer = (...parts: string[]) => parts.map((part) => part.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/**
 * Checks real answers against the document's response schemas: the operation must document the
 * status and the media type, and a JSON body must validate against its schema (JSON Schema 2020-12).
 */
export function answerChecker(
  document: Json,
): (path: string, method: string, answer: { status: number; type: string; body: string }) => string[] {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  ajv.addSchema(document, 'openapi.json');
  return (path, method, answer) => {
    const operation = (document.paths as Record<string, Json>)[path]?.[method.toLowerCase()] as Json | undefined;
    if (!operation) return [`${method} ${path} is not documented`];
    const response = (operation.responses as Record<string, Json>)[String(answer.status)];
    if (!response) return [`${method} ${path} does not document ${answer.status}`];
    const content = response.content as Record<string, Json> | undefined;
    if (!content)
      return answer.body === '' ? [] : [`${method} ${path} ${answer.status}: a body where the document has none`];
    const mediaType = answer.type.split(';')[0].trim();
    if (!content[mediaType])
      return [`${method} ${path} ${answer.status}: ${mediaType} is not one of ${Object.keys(content).join(', ')}`];
    if (mediaType !== 'application/json') return [];
    const validate = ajv.compile({
      $ref: `openapi.json#/${pointer('paths', path, method.toLowerCase(), 'responses', String(answer.status), 'content', mediaType, 'schema')}`,
    });
    return validate(JSON.parse(answer.body))
      ? []
      : (validate.errors ?? []).map(
          (error) => `${method} ${path} ${answer.status}: ${error.instancePath} ${error.message}`,
        );
  };
}
