import * as net from 'node:net';
import { AddressInfo } from 'node:net';
import { Body, Controller, Get, Module, Patch } from '@nestjs/common';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { MAX_CONNECTIONS } from '../../../src/api/connection-guard';
import {
  CONFIG_BODY_LIMIT_BYTES,
  createHttpApp,
  HEADERS_TIMEOUT_MS,
  KEEP_ALIVE_TIMEOUT_MS,
  REQUEST_TIMEOUT_MS,
} from '../../../src/api/http-server';
import { RestApiConfig } from '../../../src/config/config.types';
import { waitFor } from '../../helpers/wait-for';

/** Stand-ins for a health check, an admin read and the config write, on the real server setup. */
@Controller()
class TestRoutesController {
  @Get('primary')
  primary(): { role: string } {
    return { role: 'primary' };
  }

  @Get('config')
  config(): { ttl: number } {
    return { ttl: 30 };
  }

  @Get('metrics')
  metrics(): string {
    return 'stator_up 1\n';
  }

  @Patch('config')
  patch(@Body() body: unknown): unknown {
    return body;
  }
}

@Module({ controllers: [TestRoutesController] })
class TestRoutesModule {}

jest.setTimeout(15_000);

// Each test has a server of its own, so the timeout tests, which mostly wait, run side by side (it.concurrent).
const apps = new Set<NestFastifyApplication>();
afterAll(async () => {
  await Promise.all([...apps].map((app) => app.close()));
});

async function start(restapi: Partial<RestApiConfig> = {}): Promise<number> {
  const app = await createHttpApp(
    { module: TestRoutesModule },
    { restapi: { listen: '127.0.0.1:0', connect_address: '127.0.0.1:0', ...restapi }, compat: 'stator' },
  );
  apps.add(app);
  await app.listen(0, '127.0.0.1');
  return (app.getHttpServer().address() as AddressInfo).port;
}

function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => resolve(socket));
    socket.on('error', reject);
  });
}

/** Milliseconds until the server closes the socket, and what it sent before. */
function closedAfter(socket: net.Socket, since: number): Promise<{ ms: number; sent: string }> {
  return new Promise((resolve) => {
    let sent = '';
    socket.on('data', (chunk) => (sent += chunk.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve({ ms: Date.now() - since, sent }));
  });
}

async function get(port: number, path: string, headers: Record<string, string> = {}): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, { headers, signal: AbortSignal.timeout(2000) });
  await response.arrayBuffer();
  return response.status;
}

describe('connection timeouts fire when stated', () => {
  it.concurrent(`closes a connection that sends nothing after ${HEADERS_TIMEOUT_MS} ms, within a second`, async () => {
    const port = await start();
    const started = Date.now();
    const socket = await connect(port);
    const { ms } = await closedAfter(socket, started);
    expect(ms).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 50);
    expect(ms).toBeLessThan(HEADERS_TIMEOUT_MS + 1000);
  });

  it.concurrent(
    `answers a body shorter than its Content-Length with 408 after ${REQUEST_TIMEOUT_MS} ms, within a second`,
    async () => {
      const port = await start();
      const socket = await connect(port);
      const started = Date.now();
      socket.write(
        'PATCH /config HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"ttl":',
      );
      const { ms, sent } = await closedAfter(socket, started);
      expect(sent).toMatch(/^HTTP\/1.1 408/);
      expect(ms).toBeLessThan(REQUEST_TIMEOUT_MS + 1000);
    },
  );

  it.concurrent(
    `answers headers that dribble in, a line every 500 ms, with 408 ${HEADERS_TIMEOUT_MS} ms after their first byte, within a second`,
    async () => {
      const port = await start();
      const socket = await connect(port);
      const started = Date.now();
      socket.write('GET /primary HTTP/1.1\r\nHost: x\r\n');
      const dribble = setInterval(() => socket.writable && socket.write(`X-Slow-${Date.now()}: 1\r\n`), 500);
      try {
        const { ms, sent } = await closedAfter(socket, started);
        expect(sent).toMatch(/^HTTP\/1.1 408/);
        expect(ms).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 50);
        expect(ms).toBeLessThan(HEADERS_TIMEOUT_MS + 1000);
      } finally {
        clearInterval(dribble);
      }
    },
  );

  it.concurrent(
    `counts a kept-alive connection's next request from its own first byte: 408 ${REQUEST_TIMEOUT_MS} ms after it, not after the first request`,
    async () => {
      const port = await start();
      const socket = await connect(port);
      const closed = closedAfter(socket, 0);
      socket.write('GET /primary HTTP/1.1\r\nHost: x\r\n\r\n');
      await new Promise((resolve) => socket.once('data', resolve));
      await new Promise((resolve) => setTimeout(resolve, 3000));
      const secondAt = Date.now();
      socket.write(
        'PATCH /config HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"ttl":',
      );
      const { ms, sent } = await closed;
      expect(sent).toMatch(/\r\n\r\nHTTP\/1.1 408|^HTTP\/1.1 200[\s\S]*HTTP\/1.1 408/);
      expect(ms - secondAt).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
      expect(ms - secondAt).toBeLessThan(REQUEST_TIMEOUT_MS + 1000);
    },
  );

  // Node advertises `Keep-Alive: timeout=5` and closes a second later, so that a client honouring the header never races the close.
  it.concurrent(
    `closes an idle keep-alive connection a second after the advertised ${KEEP_ALIVE_TIMEOUT_MS} ms, within a second`,
    async () => {
      const port = await start();
      const socket = await connect(port);
      const closed = closedAfter(socket, 0);
      socket.write('GET /primary HTTP/1.1\r\nHost: x\r\n\r\n');
      const answeredAt = await new Promise<number>((resolve) => socket.once('data', () => resolve(Date.now())));
      const { ms, sent } = await closed;
      expect(sent).toMatch(/\r\nkeep-alive: timeout=5\r\n/i);
      expect(ms - answeredAt).toBeGreaterThanOrEqual(KEEP_ALIVE_TIMEOUT_MS);
      expect(ms - answeredAt).toBeLessThan(KEEP_ALIVE_TIMEOUT_MS + 2000);
    },
  );
});

describe('a connection cap that keeps health checks answered', () => {
  it(`keeps at most ${MAX_CONNECTIONS} open, closing the oldest idle ones, and still answers /primary`, async () => {
    const port = await start();
    const idle: net.Socket[] = [];
    let closedByServer = 0;
    for (let i = 0; i < MAX_CONNECTIONS + 50; i++) {
      const socket = await connect(port);
      socket.on('error', () => undefined);
      socket.on('close', () => closedByServer++);
      idle.push(socket);
    }
    try {
      expect(await get(port, '/primary')).toBe(200);
      expect(await get(port, '/primary')).toBe(200);
      await waitFor(() => closedByServer >= 50 || null, {
        timeoutMs: 2000,
        description: 'the server closing the 50 oldest idle connections',
      });
      expect(idle.slice(0, 50).every((socket) => socket.destroyed || socket.readableEnded)).toBe(true);
    } finally {
      for (const socket of idle) socket.destroy();
    }
  });
});

describe('/config bodies', () => {
  it(`refuses a body over ${CONFIG_BODY_LIMIT_BYTES} bytes with 413, at once from its Content-Length`, async () => {
    const port = await start();
    const body = JSON.stringify({ comment: 'x'.repeat(CONFIG_BODY_LIMIT_BYTES) });
    const response = await fetch(`http://127.0.0.1:${port}/config`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(response.status).toBe(413);
    expect(((await response.json()) as { message: string }).message).toBe(
      `a /config body must be at most ${CONFIG_BODY_LIMIT_BYTES} bytes`,
    );
  });

  it('accepts one just under the cap', async () => {
    const port = await start();
    const body = JSON.stringify({ comment: 'x'.repeat(CONFIG_BODY_LIMIT_BYTES - 20) });
    const response = await fetch(`http://127.0.0.1:${port}/config`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(response.status).toBe(200);
  });
});

describe('restapi.authentication_scope: admin', () => {
  const authentication = { username: 'admin', password: 's3cret' };
  const basic = `Basic ${Buffer.from('admin:s3cret').toString('base64')}`;

  it('asks for credentials on configuration reads, however the path is spelled, while health checks and /metrics stay open', async () => {
    const port = await start({ authentication, authentication_scope: 'admin' });
    expect(await get(port, '/config')).toBe(401);
    expect(await get(port, '/config/')).toBe(401);
    expect(await get(port, '/%63onfig')).toBe(401);
    expect(await get(port, '/config', { authorization: basic })).toBe(200);
    expect(await get(port, '/primary')).toBe(200);
    expect(await get(port, '/metrics')).toBe(200);
  });

  it('leaves reads open by default, as the reference', async () => {
    const port = await start({ authentication });
    expect(await get(port, '/config')).toBe(200);
  });
});
