import type * as Swagger from '@nestjs/swagger';

/**
 * @nestjs/swagger's decorators, applied only when the OpenAPI document is first built.
 *
 * The package (with lodash and js-yaml) holds about 5 MiB of an agent's memory, and only
 * `GET /openapi.json` reads what its decorators record. These stand-ins take the same arguments
 * and remember each application; `loadSwagger()` loads the package and replays them, in the order
 * they happened, with the real decorators, so the document is the one the package would have built.
 */
type Deferrable = 'ApiProperty' | 'ApiPropertyOptional' | 'ApiOperation' | 'ApiResponse' | 'ApiTags' | 'ApiQuery' | 'ApiBody' | 'ApiExtraModels';
type AnyDecorator = (target: object, key?: string | symbol, descriptor?: PropertyDescriptor) => unknown;

interface Application {
  decorator: Deferrable;
  args: unknown[];
  target: object;
  key?: string | symbol;
  descriptor?: PropertyDescriptor;
}

const applications: Application[] = [];
let swagger: typeof Swagger | null = null;

function deferred<Name extends Deferrable>(decorator: Name): (typeof Swagger)[Name] {
  const stand = (...args: unknown[]): AnyDecorator =>
    (target, key, descriptor) => {
      if (swagger) return real(decorator, args)(target, key, descriptor);
      applications.push({ decorator, args, target, key, descriptor });
      return descriptor;
    };
  return stand as unknown as (typeof Swagger)[Name];
}

function real(decorator: Deferrable, args: unknown[]): AnyDecorator {
  return (swagger![decorator] as (...args: unknown[]) => AnyDecorator)(...args);
}

/** The package itself, once every decorator applied so far has been replayed with it. */
export function loadSwagger(): typeof Swagger {
  if (!swagger) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    swagger = require('@nestjs/swagger') as typeof Swagger;
    for (const { decorator, args, target, key, descriptor } of applications.splice(0)) real(decorator, args)(target, key, descriptor);
  }
  return swagger;
}

/** As the package's: the reference to a model's schema under `components.schemas`. */
export function getSchemaPath(model: string | { name: string }): string {
  return `#/components/schemas/${typeof model === 'string' ? model : model.name}`;
}

export const ApiProperty = deferred('ApiProperty');
export const ApiPropertyOptional = deferred('ApiPropertyOptional');
export const ApiOperation = deferred('ApiOperation');
export const ApiResponse = deferred('ApiResponse');
export const ApiTags = deferred('ApiTags');
export const ApiQuery = deferred('ApiQuery');
export const ApiBody = deferred('ApiBody');
export const ApiExtraModels = deferred('ApiExtraModels');
export type { OpenAPIObject, ReferenceObject, SchemaObject } from '@nestjs/swagger';
