import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer, ServerOptions } from 'node:https';
import { AddressInfo } from 'node:net';
import { CtlIo } from '../../../src/ctl/context';
import { runStatorctl } from '../../../src/ctl/main';
import { Prompter } from '../../../src/ctl/prompt';

/** A request the fake node received. */
export interface Received {
  method: string;
  path: string;
  body: unknown;
  authorization?: string;
}

export type Route = (request: Received, response: ServerResponse) => void | Promise<void>;

/** A node API on a real loopback socket, answering from `routes` (`'GET /cluster'` → handler); 404 otherwise. */
export class FakeNode {
  readonly received: Received[] = [];
  private server!: Server;
  /** Open event streams: `emit` writes to them. */
  private readonly streams = new Set<ServerResponse>();

  constructor(readonly routes: Record<string, Route>) {}

  private scheme = 'http';

  get url(): string {
    return `${this.scheme}://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Over HTTPS with `tls`. */
  async start(tls?: ServerOptions): Promise<this> {
    const handler = (request: IncomingMessage, response: ServerResponse) => void this.handle(request, response);
    this.scheme = tls ? 'https' : 'http';
    this.server = tls ? createHttpsServer(tls, handler) : createServer(handler);
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this;
  }

  /** Sends an event to every open `/events/stream`. */
  emit(event: object): void {
    for (const stream of this.streams)
      stream.write(`event: ${String((event as { type?: unknown }).type)}\ndata: ${JSON.stringify(event)}\n\n`);
  }

  streamCount(): number {
    return this.streams.size;
  }

  async stop(): Promise<void> {
    for (const stream of this.streams) stream.end();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    let text = '';
    for await (const chunk of request) text += String(chunk);
    const path = request.url ?? '/';
    const received: Received = {
      method: request.method ?? 'GET',
      path,
      body: text ? JSON.parse(text) : undefined,
      authorization: request.headers.authorization,
    };
    this.received.push(received);
    if (request.method === 'GET' && path.startsWith('/events/stream')) {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.flushHeaders();
      this.streams.add(response);
      response.on('close', () => this.streams.delete(response));
      return;
    }
    const route = this.routes[`${received.method} ${path.split('?')[0]}`];
    if (!route) {
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"code":404,"message":"not found"}');
      return;
    }
    await route(received, response);
  }
}

export function json(body: unknown, status = 200): Route {
  return (_request, response) =>
    void response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

export function text(body: string, status = 200): Route {
  return (_request, response) => void response.writeHead(status, { 'content-type': 'text/plain' }).end(body);
}

/** Answers typed in order; records the questions. */
export function scriptedPrompter(answers: string[]): Prompter & { questions: string[] } {
  const questions: string[] = [];
  return {
    questions,
    ask: async (question) => {
      questions.push(question);
      return answers.length > 0 ? answers.shift()! : null;
    },
    close: () => undefined,
  };
}

/** Runs statorctl in-process: exit code, what it wrote, the questions it asked. */
export async function statorctl(
  argv: string[],
  answers: string[] = [],
  env: NodeJS.ProcessEnv = {},
  interrupted?: Promise<void>,
  onOutput?: (stdout: string) => void,
) {
  let stdout = '';
  let stderr = '';
  const prompter = scriptedPrompter(answers);
  const io: CtlIo = {
    stdout: (t) => {
      stdout += t;
      onOutput?.(stdout);
    },
    stderr: (t) => (stderr += t),
    env,
    prompter,
    interrupted,
  };
  const code = await runStatorctl(argv, io);
  return { code, stdout, stderr, questions: prompter.questions };
}

/** A 3-member cluster document; `base` is the fake node's URL (every member's api_url points at it). */
export function clusterDocument(base: string, path = '/stator', leader = 'node1', timeline = 4) {
  return {
    scope: 'demo',
    members: ['node1', 'node2', 'node3'].map((name, index) => ({
      name,
      role: name === leader ? 'leader' : 'replica',
      state: name === leader ? 'running' : 'streaming',
      api_url: `${base}${path}`,
      host: '127.0.0.1',
      port: 5432 + index,
      timeline,
      ...(name === leader ? {} : { lag: 0 }),
      ...(name === 'node3' ? { tags: { nofailover: true } } : {}),
    })),
  };
}
