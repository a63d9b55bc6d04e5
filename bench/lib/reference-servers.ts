import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../scripts/lib/ports';
import { killPid, trackChild } from './cleanup';
import { runWrk, WrkResult } from './wrk';
import { httpCode } from './http';
import { pollUntil } from './util';

/**
 * What the same wrk load gives on this machine for servers that do nothing but answer a 588-byte
 * JSON document (the size of Stator's status document) on keep-alive connections: bare
 * `node:http`, bare Fastify, and Nest on Fastify with one controller. They bound what any Node
 * agent built on that stack can reach here, and split Stator's cost between the layers.
 */
export interface ReferenceRun {
  server: string;
  result: WrkResult;
}

const BODY = `{"state":"running","role":"primary","pad":"${'x'.repeat(588 - 44)}"}`;

function scripts(repoRoot: string): [string, string][] {
  const mod = (name: string) => JSON.stringify(join(repoRoot, 'node_modules', name));
  return [
    [
      'node:http (bare)',
      `const body = ${JSON.stringify(BODY)};
       require('node:http').createServer((q, s) => { s.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) }); s.end(body); })
         .listen(+process.argv[2], '127.0.0.1');`,
    ],
    [
      'Fastify (bare)',
      `const body = JSON.parse(${JSON.stringify(BODY)});
       const app = require(${mod('fastify')})();
       app.get('/primary', async () => body);
       app.listen({ port: +process.argv[2], host: '127.0.0.1' });`,
    ],
    [
      'Nest on Fastify (one controller)',
      `require(${mod('reflect-metadata')});
       const { Module, Controller, Get } = require(${mod('@nestjs/common')});
       const { NestFactory } = require(${mod('@nestjs/core')});
       const { FastifyAdapter } = require(${mod('@nestjs/platform-fastify')});
       const body = JSON.parse(${JSON.stringify(BODY)});
       class C { get() { return body; } }
       Get('/primary')(C.prototype, 'get', Object.getOwnPropertyDescriptor(C.prototype, 'get'));
       Controller()(C);
       class M {}
       Module({ controllers: [C] })(M);
       NestFactory.create(M, new FastifyAdapter(), { logger: false }).then((app) => app.listen(+process.argv[2], '127.0.0.1'));`,
    ],
  ];
}

export async function referenceServers(repoRoot: string, seconds: number): Promise<ReferenceRun[]> {
  const dir = mkdtempSync(join(tmpdir(), 'stator-bench-ref-'));
  const runs: ReferenceRun[] = [];
  try {
    for (const [server, code] of scripts(repoRoot)) {
      const file = join(dir, 'server.js');
      writeFileSync(file, code);
      const port = await freePort();
      const child: ChildProcess = spawn(process.execPath, [file, String(port)], { stdio: 'ignore', cwd: repoRoot });
      trackChild(child);
      try {
        const up = await pollUntil(async () => (await httpCode(`http://127.0.0.1:${port}/primary`, 500)) === 200, 10_000, 100);
        if (!up) throw new Error(`${server} did not start`);
        runs.push({ server, result: { ...(await runWrk(`http://127.0.0.1:${port}/primary`, seconds)), raw: '' } });
      } finally {
        if (child.pid && child.exitCode === null) {
          const exited = new Promise((resolve) => child.once('exit', resolve));
          killPid(child.pid);
          await exited;
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return runs;
}
