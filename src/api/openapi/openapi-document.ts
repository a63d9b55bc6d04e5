import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, getSchemaPath, type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { StatusDocumentDto } from '../dto/read-documents.dto';
import { HEALTH_PATHS } from '../health';
import { STATUS_LINE_ONLY } from '../health.controller';
import { ApiIdentity } from '../status-document';

type Json = Record<string, unknown>;
type Operation = {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: unknown[];
  responses: Record<string, Json>;
};
type PathItem = Partial<Record<'get' | 'head' | 'options' | 'post' | 'put' | 'patch' | 'delete', Operation>> & Json;

const DESCRIPTION = [
  'The control and status API every Stator node serves (Patroni-compatible paths, codes and texts).',
  '',
  'Common to every path: a path no route serves answers 404 and a method a path does not serve answers 405 with an',
  '`Allow` header, both with the JSON error body `{error, message, statusCode}`; a request not received within 5 s answers',
  '408, headers over 16 KiB 431. HEAD answers what GET answers, without the body. Operation endpoints answer plain',
  'text (`text/plain; charset=utf-8`). With `restapi.authentication` every unsafe method needs basic auth (401),',
  'with `restapi.allowlist` it must come from an allowed address (403); `authentication_scope: admin` extends both',
  'to `/config`, `/cluster`, `/history`, `/schedule`, `/events` and `/ui`.',
].join('\n');

/**
 * The OpenAPI 3.1 document of the node's routes: the controllers' routes as @nestjs/swagger scans them,
 * plus the health checks, which are registered on Fastify directly (HealthRoutes) from the same table
 * (HEALTH_PATHS) so the document cannot drift from them, and the HEAD operation Fastify adds to each GET.
 */
export function buildOpenApiDocument(app: INestApplication, identity: ApiIdentity): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Stator node API')
    .setDescription(DESCRIPTION)
    .setVersion(identity.version)
    .setOpenAPIVersion('3.1.0')
    .setLicense('MIT', 'https://opensource.org/licenses/MIT')
    .addBasicAuth()
    .build();
  const document = SwaggerModule.createDocument(app, config);
  const paths = document.paths as Record<string, PathItem>;
  for (const path of HEALTH_PATHS) paths[path] = healthPathItem(path);
  for (const item of Object.values(paths)) if (item.get && !item.head) item.head = headOf(item.get);
  if (identity.productKey === 'patroni') renameIdentityKey(document);
  document.paths = Object.fromEntries(
    Object.entries(paths).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
  ) as OpenAPIObject['paths'];
  return toOpenApi31(document) as OpenAPIObject;
}

const HEALTH_PARAMETERS = [
  {
    name: 'lag',
    in: 'query',
    required: false,
    schema: { type: 'string', maxLength: 64, examples: ['16MB', '1048576'] },
    description: 'Largest replication lag accepted: bytes, or a size with B, kB, MB, GB, TB. Unparsable: 400.',
  },
  {
    name: 'replication_state',
    in: 'query',
    required: false,
    schema: { type: 'string', examples: ['streaming'] },
    description: 'Replica paths: only a replica in this replication state.',
  },
  {
    name: 'mode',
    in: 'query',
    required: false,
    schema: { type: 'string', enum: ['apply', 'write'] },
    description: '`/readiness`: measure the lag by the replayed (default) or received position.',
  },
  {
    name: 'tags',
    in: 'query',
    required: false,
    style: 'form',
    explode: true,
    schema: { type: 'object', additionalProperties: { type: 'string' }, examples: [{ tag_zone: 'a' }] },
    description: "Repeatable `tag_<key>=<value>`: the node's tag `<key>` must equal `<value>` (503 otherwise).",
  },
];

function healthPathItem(path: string): PathItem {
  const name = path === '/' ? 'root' : path.slice(1).replace(/[^A-Za-z0-9]+/g, '_');
  const badQuery = {
    description: 'A query value Stator cannot read (`lag`).',
    content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBodyDto' } } },
  };
  const withDocument = !STATUS_LINE_ONLY.has(path);
  const answer = (description: string) =>
    withDocument
      ? { description, content: { 'application/json': { schema: { $ref: getSchemaPath(StatusDocumentDto) } } } }
      : { description };
  const common = { tags: ['health'], parameters: HEALTH_PARAMETERS };
  return {
    get: {
      ...common,
      operationId: `health_${name}`,
      summary: `Health check ${path}: 200 when the node meets its condition, 503 otherwise (spec 4.1)`,
      responses: {
        200: answer('The node meets the condition.'),
        503: answer('The node does not meet the condition.'),
        400: badQuery,
      },
    },
    options: {
      ...common,
      operationId: `health_${name}_options`,
      summary: `Health check ${path}, the code alone`,
      responses: {
        200: { description: 'The node meets the condition.' },
        503: { description: 'The node does not meet the condition.' },
        400: badQuery,
      },
    },
  };
}

/** Fastify answers HEAD for every GET route: the same codes, no body. */
function headOf(get: Operation): Operation {
  const responses = Object.fromEntries(
    Object.entries(get.responses).map(([code, response]) => [code, { description: response.description }]),
  );
  return {
    ...get,
    operationId: `${get.operationId ?? 'get'}_head`,
    summary: `${get.summary ?? ''} (status line and headers only)`.trim(),
    responses,
  };
}

/** In compatibility mode the status document's identity object is `patroni`. */
function renameIdentityKey(document: OpenAPIObject): void {
  const schema = document.components?.schemas?.[StatusDocumentDto.name] as
    { properties?: Json; required?: string[] } | undefined;
  if (!schema?.properties) return;
  schema.properties = Object.fromEntries(
    Object.entries(schema.properties).map(([key, value]) => [key === 'stator' ? 'patroni' : key, value]),
  );
  schema.required = schema.required?.map((key) => (key === 'stator' ? 'patroni' : key));
}

/** OpenAPI 3.0's `nullable: true` becomes 3.1's (JSON Schema's) `type: [T, 'null']`; everything else is kept. */
export function toOpenApi31(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toOpenApi31);
  if (value === null || typeof value !== 'object') return value;
  const { nullable, ...rest } = value as Json;
  const converted = Object.fromEntries(Object.entries(rest).map(([key, item]) => [key, toOpenApi31(item)]));
  if (nullable === true) {
    if (typeof converted.type === 'string') converted.type = [converted.type, 'null'];
    else if (converted.$ref || converted.oneOf || converted.allOf)
      return { oneOf: [converted.$ref ? { $ref: converted.$ref } : converted, { type: 'null' }] };
  }
  return converted;
}
