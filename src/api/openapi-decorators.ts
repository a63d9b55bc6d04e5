import type { Type } from '@nestjs/common';
import type * as Swagger from '@nestjs/swagger';

/**
 * The @nestjs/swagger decorators the controllers and DTOs carry. They only feed the OpenAPI document, which
 * `npm run build` generates once (scripts/build-openapi.ts) and the agent serves as a file: loading @nestjs/swagger
 * (with lodash and js-yaml) costs a process about 7 MiB of RSS (docs/benchmarks.md, "Stator's RSS share above the floor"), so the
 * agent never loads it and its decorators record nothing there. They are @nestjs/swagger's own wherever
 * `STATOR_OPENAPI_DECORATORS=1` is set before the first API file loads: the generator and the test suites
 * (jest.config.js), which compare the generated file with the document built from the code
 * (test/integration/openapi-diagnostics.int-spec.ts; it also checks that the agent never loads the package).
 */
export const OPENAPI_DECORATORS_LIVE = process.env.STATOR_OPENAPI_DECORATORS === '1';

type Decorators = Pick<
  typeof Swagger,
  | 'ApiBody'
  | 'ApiExtraModels'
  | 'ApiOperation'
  | 'ApiProperty'
  | 'ApiPropertyOptional'
  | 'ApiQuery'
  | 'ApiResponse'
  | 'ApiTags'
>;

const recordNothing = (): ClassDecorator & MethodDecorator & PropertyDecorator => () => undefined;

const INERT: Decorators = {
  ApiBody: recordNothing,
  ApiExtraModels: recordNothing,
  ApiOperation: recordNothing,
  ApiProperty: recordNothing,
  ApiPropertyOptional: recordNothing,
  ApiQuery: recordNothing,
  ApiResponse: recordNothing,
  ApiTags: recordNothing,
};

const decorators: Decorators = OPENAPI_DECORATORS_LIVE
  ? // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only where the document is built
    (require('@nestjs/swagger') as typeof Swagger)
  : INERT;

export const {
  ApiBody,
  ApiExtraModels,
  ApiOperation,
  ApiProperty,
  ApiPropertyOptional,
  ApiQuery,
  ApiResponse,
  ApiTags,
} = decorators;

/** A model's place in the document's components, as @nestjs/swagger's `getSchemaPath` names it. */
export function getSchemaPath(model: string | Type<unknown>): string {
  return `#/components/schemas/${typeof model === 'string' ? model : model.name}`;
}
