import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../scripts/lib/ports';
import { AGENT_ENVIRONMENT, AGENT_NODE_FLAGS } from '../../src/cli/agent-node-flags';
import { killPid, trackChild } from './cleanup';
import { runWrk, WrkResult } from './wrk';
import { httpCode } from './http';
import { memory, MemoryReading } from './proc';
import { pollUntil, sleep } from './util';

/**
 * What the same wrk load gives on this machine for servers that do nothing but answer a 588-byte
 * JSON document (the size of Stator's status document) on keep-alive connections: bare
 * `node:http`, bare Fastify, and Nest on Fastify with one controller, the last once more with the
 * other packages the design requires (pg, xstate) loaded as the agent loads them. They run with the
 * agent's Node flags and environment, and bound what any Node agent built on that stack can reach
 * here: requests/s, and the memory it holds before doing anything else.
 */
export interface ReferenceRun {
  server: string;
  result: WrkResult;
  /** After IDLE_BEFORE_LOAD_MS of quiet from its first answer (absent in older results). */
  memoryIdle?: MemoryReading | null;
  /** Right after the wrk run, as the agents' after-load reading. */
  memoryAfterLoad?: MemoryReading | null;
}

/** Quiet time before the idle reading: startup garbage collected (V8's memory reducer starts ~8 s after). */
const IDLE_BEFORE_LOAD_MS = 15_000;
export const MEMORY_READINGS =
  "15 s after its first answer (idle) and right after its load (the floor's: as many wrk runs as the leader gets)";

/** The least any agent of the required stack holds: no Stator code, one route. */
export const STACK_FLOOR_SERVER = 'Nest on Fastify (one controller) + pg + xstate, loaded as the agent loads them';

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
    ['Nest on Fastify (one controller)', nestServer(mod, '')],
    [STACK_FLOOR_SERVER, stackFloorScript(repoRoot)],
  ];
}

/**
 * The floor server's program: Nest on Fastify with one controller, pg and xstate loaded as the agent loads them;
 * `packages`: more of the required stack loaded beside them (bench/memory-share.ts: class-validator).
 */
export function stackFloorScript(repoRoot: string, packages: string[] = []): string {
  const mod = (name: string) => JSON.stringify(join(repoRoot, 'node_modules', name));
  const lightly = JSON.stringify(join(repoRoot, 'dist', 'src', 'cli', 'load-dependencies-lightly.js'));
  const more = packages.map((name) => ` require(${mod(name)});`).join('');
  return nestServer(mod, `require(${lightly}); require(${mod('pg')}); require(${mod('xstate')});${more}`);
}

function nestServer(mod: (name: string) => string, preload: string): string {
  return `${preload}
    require(${mod('reflect-metadata')});
    const { Module, Controller, Get } = require(${mod('@nestjs/common')});
    const { NestFactory } = require(${mod('@nestjs/core')});
    const { FastifyAdapter } = require(${mod('@nestjs/platform-fastify')});
    const body = JSON.parse(${JSON.stringify(BODY)});
    class C { get() { return body; } }
    Get('/primary')(C.prototype, 'get', Object.getOwnPropertyDescriptor(C.prototype, 'get'));
    Controller()(C);
    class M {}
    Module({ controllers: [C] })(M);
    NestFactory.create(M, new FastifyAdapter(), { logger: false }).then((app) => app.listen(+process.argv[2], '127.0.0.1'));`;
}

export async function referenceServers(
  repoRoot: string,
  seconds: number,
  leaderLoadRuns: number,
): Promise<ReferenceRun[]> {
  const dir = mkdtempSync(join(tmpdir(), 'stator-bench-ref-'));
  const runs: ReferenceRun[] = [];
  try {
    for (const [server, code] of scripts(repoRoot)) {
      const file = join(dir, 'server.js');
      writeFileSync(file, code);
      const port = await freePort();
      const child: ChildProcess = spawn(process.execPath, [...AGENT_NODE_FLAGS, file, String(port)], {
        stdio: 'ignore',
        cwd: repoRoot,
        env: { ...process.env, ...AGENT_ENVIRONMENT },
      });
      trackChild(child);
      try {
        const up = await pollUntil(
          async () => (await httpCode(`http://127.0.0.1:${port}/primary`, 500)) === 200,
          10_000,
          100,
        );
        if (!up || !child.pid) throw new Error(`${server} did not start`);
        await sleep(IDLE_BEFORE_LOAD_MS);
        const memoryIdle = memory(child.pid);
        const result = { ...(await runWrk(`http://127.0.0.1:${port}/primary`, seconds)), raw: '' };
        // The floor gets as much load as the most loaded agent (the leader: every target but /replica).
        if (server === STACK_FLOOR_SERVER)
          for (let run = 1; run < leaderLoadRuns; run++) await runWrk(`http://127.0.0.1:${port}/primary`, seconds);
        runs.push({ server, result, memoryIdle, memoryAfterLoad: memory(child.pid) });
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
