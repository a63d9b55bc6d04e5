import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Module } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';

/**
 * Part of `npm run build`: the OpenAPI document each product's agent serves at `GET /openapi.json`, generated from
 * the controllers' and DTOs' decorators with @nestjs/swagger, which the agent itself never loads
 * (src/api/openapi-decorators.ts). It writes beside the compiled controller one file per product key, as
 * the agent composes its API: the same controllers (ApiModule, OperationsController) over no running node, since
 * only their routes and decorators are read. test/integration/openapi-diagnostics.int-spec.ts checks a running
 * agent's document against its routes and against one built here from the code.
 */
process.env.STATOR_OPENAPI_DECORATORS = '1';

// Loaded after the line above, so that the API's decorators are @nestjs/swagger's.
/* eslint-disable @typescript-eslint/no-require-imports */
const { ApiModule } = require('../src/api/api.module') as typeof import('../src/api/api.module');
const { createHttpApp } = require('../src/api/http-server') as typeof import('../src/api/http-server');
const { OperationsController } =
  require('../src/api/operations.controller') as typeof import('../src/api/operations.controller');
const { buildOpenApiDocument } =
  require('../src/api/openapi/openapi-document') as typeof import('../src/api/openapi/openapi-document');
const { generatedDocumentPath } =
  require('../src/api/openapi/openapi.controller') as typeof import('../src/api/openapi/openapi.controller');
const { NodeOperations } = require('../src/ha/node-operations') as typeof import('../src/ha/node-operations');
const { STATOR_VERSION } = require('../src/version') as typeof import('../src/version');
/* eslint-enable @typescript-eslint/no-require-imports */

type ProductKey = 'stator' | 'patroni';

/** The document an agent of `productKey` serves, built from the code. */
export async function generateOpenApiDocument(productKey: ProductKey): Promise<string> {
  const identity = { scope: 'openapi', version: STATOR_VERSION, productKey };
  const noNode = () => {
    throw new Error('the OpenAPI generator serves no requests');
  };
  @Module({
    imports: [ApiModule.register({ identity, source: { view: noNode }, clock: { now: () => 0 } })],
    controllers: [OperationsController],
    providers: [{ provide: NodeOperations, useValue: {} }],
  })
  class DocumentedApiModule {}
  const app: NestFastifyApplication = await createHttpApp({ module: DocumentedApiModule });
  try {
    await app.init();
    return JSON.stringify(buildOpenApiDocument(app, identity));
  } finally {
    await app.close();
  }
}

async function main(): Promise<void> {
  const root = resolve(__dirname, '..', '..');
  const directory = join(root, 'dist', 'src', 'api', 'openapi');
  mkdirSync(directory, { recursive: true });
  for (const productKey of ['stator', 'patroni'] as const)
    writeFileSync(generatedDocumentPath(productKey, directory), await generateOpenApiDocument(productKey));
}

if (require.main === module)
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
