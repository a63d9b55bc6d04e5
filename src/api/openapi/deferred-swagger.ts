import type * as Swagger from '@nestjs/swagger';
import { deferredPackage } from '../deferred-decorators';

/**
 * @nestjs/swagger's decorators, applied only when the OpenAPI document is first built.
 *
 * The package (with lodash and js-yaml) holds about 5 MiB of an agent's memory, and only
 * `GET /openapi.json` reads what its decorators record. `loadSwagger()` loads it and replays the
 * decorators applied so far, so the document is the one the package would have built.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use, not at start (see above)
const swagger = deferredPackage(() => require('@nestjs/swagger') as typeof Swagger);

export const loadSwagger = (): typeof Swagger => swagger.load();

/** As the package's: the reference to a model's schema under `components.schemas`. */
export function getSchemaPath(model: string | { name: string }): string {
  return `#/components/schemas/${typeof model === 'string' ? model : model.name}`;
}

export const ApiProperty = swagger.decorator('ApiProperty');
export const ApiPropertyOptional = swagger.decorator('ApiPropertyOptional');
export const ApiOperation = swagger.decorator('ApiOperation');
export const ApiResponse = swagger.decorator('ApiResponse');
export const ApiTags = swagger.decorator('ApiTags');
export const ApiQuery = swagger.decorator('ApiQuery');
export const ApiBody = swagger.decorator('ApiBody');
export const ApiExtraModels = swagger.decorator('ApiExtraModels');
export type { OpenAPIObject, ReferenceObject, SchemaObject } from '@nestjs/swagger';
