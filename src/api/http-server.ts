import 'reflect-metadata';
import { DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';

/** Requests larger than this are refused with 413 (the reference has no limit). */
export const BODY_LIMIT_BYTES = 1024 * 1024;

/** Creates the Nest application on Fastify: HTTP/1.1 keep-alive, Content-Length on every answer. */
export async function createHttpApp(module: DynamicModule): Promise<NestFastifyApplication> {
  const adapter = new FastifyAdapter({
    bodyLimit: BODY_LIMIT_BYTES,
    keepAliveTimeout: 5_000,
    requestTimeout: 10_000,
    routerOptions: { ignoreTrailingSlash: true },
  });
  return NestFactory.create<NestFastifyApplication>(module, adapter, { logger: ['error', 'warn'] });
}

/** `host:port` → its parts; `*` and empty host mean every interface. */
export function splitListen(listen: string): { host: string; port: number } {
  const at = listen.lastIndexOf(':');
  const host = listen.slice(0, at).replace(/^\[|\]$/g, '');
  return { host: host === '*' || host === '' ? '0.0.0.0' : host, port: Number(listen.slice(at + 1)) };
}
