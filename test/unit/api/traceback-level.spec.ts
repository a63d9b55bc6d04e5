import { readFileSync } from 'node:fs';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Controller, Get, Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { HttpExceptionFilter } from '../../../src/api/http-exception.filter';
import { createHttpApp } from '../../../src/api/http-server';
import { createConfiguredLogger, LogSettings } from '../../../src/common/logger';
import { LOGGER } from '../../../src/common/tokens';
import { removeDir, tmpDir } from '../../helpers/tmp';

/** `log.traceback_level` on a request that fails unexpectedly: the 500 on the wire, the stack trace in the agent's log. */

@Controller('broken')
class BrokenController {
  @Get()
  read(): never {
    throw new TypeError("Cannot read properties of undefined (reading 'xlog')");
  }
}

let dir: string;
let apps = 0;
const open: NestFastifyApplication[] = [];
beforeAll(() => {
  dir = tmpDir('stator-traceback-');
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((app) => app.close()));
});
afterAll(() => removeDir(dir));

/** An API whose agent logger follows `log`; answers the status of GET /broken and the log's lines after it. */
async function failOnce(log: Partial<LogSettings>): Promise<{ status: number; body: string; lines: string[] }> {
  const logDir = join(dir, `logs-${++apps}`);
  const logger = createConfiguredLogger(
    {
      level: 'info',
      type: 'plain',
      format: '%(levelname)s: %(message)s',
      file_num: 1,
      file_size: 1e9,
      dir: logDir,
      ...log,
    },
    'stator.log',
  );
  @Module({
    controllers: [BrokenController],
    providers: [
      { provide: LOGGER, useValue: logger },
      { provide: APP_FILTER, useClass: HttpExceptionFilter },
    ],
  })
  class BrokenModule {}
  const app = await createHttpApp({ module: BrokenModule });
  open.push(app);
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  const answer = await fetch(`http://127.0.0.1:${port}/broken`);
  const lines = readFileSync(join(logDir, 'stator.log'), 'utf8').split('\n').filter(Boolean);
  return { status: answer.status, body: await answer.text(), lines };
}

it('error (the default): an ERROR line, then the stack trace', async () => {
  const { status, body, lines } = await failOnce({});

  expect(status).toBe(500);
  expect(body).toContain('internal error; see the node log');
  expect(lines[0]).toBe('ERROR: GET /broken failed');
  expect(lines[1]).toBe("TypeError: Cannot read properties of undefined (reading 'xlog')");
  expect(lines[2]).toMatch(/^\s+at /);
});

it('debug at level info: one ERROR line with the error, no stack trace', async () => {
  const { status, lines } = await failOnce({ traceback_level: 'debug' });

  expect(status).toBe(500);
  expect(lines).toEqual(["ERROR: GET /broken failed, DETAIL: 'Cannot read properties of undefined (reading 'xlog')'"]);
});

it('debug at level debug: the stack trace in a DEBUG line', async () => {
  const { lines } = await failOnce({ traceback_level: 'debug', level: 'debug' });

  expect(lines.filter((line) => /^(ERROR|DEBUG): /.test(line))).toEqual(['DEBUG: GET /broken failed']);
  expect(lines[lines.indexOf('DEBUG: GET /broken failed') + 1]).toBe(
    "TypeError: Cannot read properties of undefined (reading 'xlog')",
  );
});
