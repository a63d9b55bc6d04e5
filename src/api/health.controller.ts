import { Controller, Get, Options, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { BadHealthQuery, HEALTH_PATHS, HealthQuery, healthStatus } from './health';
import { NodeStateService } from './node-state.service';

const STATUS_LINE_ONLY = new Set(['/liveness', '/readiness']);
const ROUTES = HEALTH_PATHS.map((path) => path.slice(1));

/**
 * Health checks for load balancers and probes (spec 4.1). GET answers the status document with
 * the code; HEAD (registered by Fastify for every GET) and OPTIONS the code alone.
 */
@Controller()
export class HealthController {
  constructor(private readonly state: NodeStateService) {}

  @Get(ROUTES)
  get(@Req() request: FastifyRequest, @Query() query: Record<string, string | string[]>, @Res() reply: FastifyReply): void {
    this.answer(request, query, reply, true);
  }

  @Options(ROUTES)
  options(@Req() request: FastifyRequest, @Query() query: Record<string, string | string[]>, @Res() reply: FastifyReply): void {
    this.answer(request, query, reply, false);
  }

  private answer(request: FastifyRequest, query: Record<string, string | string[]>, reply: FastifyReply, withBody: boolean): void {
    const path = normalizePath(request.url);
    const view = this.state.view();
    let code: number;
    try {
      code = healthStatus(path, firstValues(query), view, this.state.now());
    } catch (error) {
      if (!(error instanceof BadHealthQuery)) throw error;
      void reply.code(400).send({ error: 'Bad Request', message: error.message, statusCode: 400 });
      return;
    }
    if (!withBody || STATUS_LINE_ONLY.has(path)) {
      void reply.code(code).send();
      return;
    }
    void reply.code(code).send(this.state.statusDocument(view));
  }
}

/** A repeated query parameter counts by its first value, as in the reference (`?lag=0&lag=10MB` → `0`). */
function firstValues(query: Record<string, string | string[] | undefined>): HealthQuery {
  const first: HealthQuery = {};
  for (const [key, value] of Object.entries(query ?? {})) first[key] = Array.isArray(value) ? value[0] : value;
  return first;
}

/** `/replica/?lag=1` → `/replica` (a trailing slash is tolerated). */
export function normalizePath(url: string): string {
  const path = url.split('?')[0];
  return path.length > 1 ? path.replace(/\/+$/, '') || '/' : path;
}
