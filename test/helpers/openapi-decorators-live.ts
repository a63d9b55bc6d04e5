// Loaded before every unit spec (jest.config.js): the API's OpenAPI decorators are @nestjs/swagger's, so a test app
// serves the document built from its code (src/api/openapi-decorators.ts). Agents started from dist/ by the
// integration specs serve the generated file instead, as in production.
process.env.STATOR_OPENAPI_DECORATORS = '1';
