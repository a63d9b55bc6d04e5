import { Injectable, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { BadHealthQuery, HEALTH_PATHS, HealthQuery, healthStatus } from './health';
import { NodeStateService } from './node-state.service';

/** Probes answered with the status line alone, GET included. */
export const STATUS_LINE_ONLY: ReadonlySet<string> = new Set(['/liveness', '/readiness']);

/** The Content-Type Fastify gives a JSON document, for the bytes served in its place. */
const JSON_TYPE = 'application/json; charset=utf-8';

type Query = Record<string, string | string[] | undefined>;

/**
 * Health checks for load balancers and probes (spec 4.1). GET answers the status document with
 * the code; HEAD (registered by Fastify for every GET) and OPTIONS the code alone.
 *
 * The hottest paths of the agent: HAProxy and orchestrators call them many times a second. They
 * are registered on Fastify directly when the module starts, past Nest's per-request pipeline
 * (guards, pipes, interceptors: none apply here), which costs about a third of their throughput.
 */
@Injectable()
export class HealthRoutes implements OnModuleInit {
  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly state: NodeStateService,
  ) {}

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    for (const path of HEALTH_PATHS) {
      fastify.get(path, (request, reply) => this.answer(path, request.query as Query, reply, true));
      fastify.options(path, (request, reply) => this.answer(path, request.query as Query, reply, false));
    }
  }

  private answer(path: string, query: Query, reply: FastifyReply, withBody: boolean): void {
    const view = this.state.view();
    const now = this.state.now();
    let code: number;
    try {
      code = healthStatus(path, firstValues(query), view, now);
    } catch (error) {
      if (!(error instanceof BadHealthQuery)) throw error;
      void reply.code(400).send({ error: 'Bad Request', message: error.message, statusCode: 400 });
      return;
    }
    if (!withBody || STATUS_LINE_ONLY.has(path)) {
      void reply.code(code).send();
      return;
    }
    void reply.code(code).type(JSON_TYPE).send(this.state.statusBody(view, now));
  }
}

/** A repeated query parameter counts by its first value, as in the reference (`?lag=0&lag=10MB` → `0`). */
function firstValues(query: Query): HealthQuery {
  const first: HealthQuery = {};
  for (const [key, value] of Object.entries(query ?? {})) first[key] = Array.isArray(value) ? value[0] : value;
  return first;
}

/** `/replica/?lag=1` → `/replica` (a trailing slash is tolerated). */
export function normalizePath(url: string): string {
  const path = url.split('?')[0];
  return path.length > 1 ? path.replace(/\/+$/, '') || '/' : path;
}
