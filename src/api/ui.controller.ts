import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Controller, Get, HttpException, HttpStatus, Param, Res } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from './openapi-decorators';
import type { FastifyReply } from 'fastify';
import { MACHINES } from '../statecharts/machines';
import { errorBody } from './http-exception.filter';
import { ErrorAnswers } from './openapi/api-answers';

const NOT_INSTALLED: [number, string] = [404, 'No such file, or the UI files are not installed with this agent.'];
const file = (type: string, description: string) =>
  ApiResponse({ status: 200, description, content: { [type]: { schema: { type: 'string' } } } });

interface Asset {
  contentType: string;
  body: Buffer;
}

/** The key of the page itself among the assets (served at `/ui`). */
const PAGE = '';

const JAVASCRIPT = 'text/javascript; charset=utf-8';

/** The page's own files in `src/ui/`, by the name they are requested under (`/ui/assets/<name>`). */
const PAGE_ASSETS: Record<string, string> = {
  'ui.css': 'text/css; charset=utf-8',
  'page-common.js': JAVASCRIPT,
  'statechart-view.js': JAVASCRIPT,
  'time-travel.js': JAVASCRIPT,
  'ui.js': JAVASCRIPT,
};

/** Built by `npm run build` (scripts/build-ui.ts): the fold of `stator audit replay --at`, for the page's time travel. */
const REPLAY_FOLD = 'replay-fold.js';

/**
 * Everything the page loads comes from this node: no other origin, no inline script. Inline
 * styles are allowed because the statechart SVGs carry their own `<style>`.
 */
const CONTENT_SECURITY_POLICY =
  "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/**
 * The cluster's web page: `GET /ui` (the HTML), `GET /ui/assets/<name>` (its CSS and scripts, and
 * the bundled replay fold) and
 * `GET /ui/statecharts/<machine>.svg` (the committed diagrams). The files are read once, at start,
 * from the checkout the agent runs from (`src/ui/` and `statecharts/`); they are served from memory
 * and only by their known names, so no request reaches the file system.
 */
@ApiTags('ui')
@Controller('ui')
export class UiController {
  private readonly assets: Map<string, Asset> | null = loadAssets();

  @Get()
  @ApiOperation({ summary: "The cluster's web page" })
  @file('text/html', "The cluster's web page.")
  @ErrorAnswers(NOT_INSTALLED)
  page(@Res() reply: FastifyReply): void {
    this.send(reply, PAGE);
  }

  @Get('assets/:name')
  @ApiOperation({ summary: "The page's CSS and script" })
  @ApiResponse({
    status: 200,
    description: "The page's CSS or script.",
    content: { 'text/css': { schema: { type: 'string' } }, 'text/javascript': { schema: { type: 'string' } } },
  })
  @ErrorAnswers(NOT_INSTALLED)
  asset(@Param('name') name: string, @Res() reply: FastifyReply): void {
    this.send(reply, `assets/${name}`);
  }

  @Get('statecharts/:file')
  @ApiOperation({ summary: 'A statechart diagram (SVG)' })
  @file('image/svg+xml', "A statechart of the agent's machines.")
  @ErrorAnswers(NOT_INSTALLED)
  statechart(@Param('file') file: string, @Res() reply: FastifyReply): void {
    this.send(reply, `statecharts/${file}`);
  }

  private send(reply: FastifyReply, path: string): void {
    if (!this.assets) {
      throw new HttpException(
        errorBody(HttpStatus.NOT_FOUND, 'the UI files (src/ui/, statecharts/) are not installed with this agent'),
        HttpStatus.NOT_FOUND,
      );
    }
    const asset = this.assets.get(path);
    if (!asset)
      throw new HttpException(errorBody(HttpStatus.NOT_FOUND, `no UI file at /ui/${path}`), HttpStatus.NOT_FOUND);
    void reply
      .code(HttpStatus.OK)
      .header('content-type', asset.contentType)
      .header('cache-control', 'no-cache')
      .header('x-content-type-options', 'nosniff')
      .header('content-security-policy', CONTENT_SECURITY_POLICY)
      .send(asset.body);
  }
}

/** The page, its assets and the diagrams, or null when the agent runs without a checkout beside it (the Docker image). */
function loadAssets(): Map<string, Asset> | null {
  const root = checkoutRoot(__dirname);
  if (!root) return null;
  // Keyed by the request path under /ui/: a request for anything else finds nothing.
  const assets = new Map<string, Asset>();
  const add = (key: string, file: string, contentType: string) =>
    assets.set(key, { contentType, body: readFileSync(file) });
  add(PAGE, join(root, 'src', 'ui', 'index.html'), 'text/html; charset=utf-8');
  for (const [name, contentType] of Object.entries(PAGE_ASSETS))
    add(`assets/${name}`, join(root, 'src', 'ui', name), contentType);
  // Missing when the agent runs from sources that were never built: the page then offers no time travel.
  const fold = join(root, 'dist', 'ui', REPLAY_FOLD);
  if (existsSync(fold)) add(`assets/${REPLAY_FOLD}`, fold, JAVASCRIPT);
  for (const machine of Object.keys(MACHINES)) {
    const file = join(root, 'statecharts', `${machine}.svg`);
    if (existsSync(file)) add(`statecharts/${machine}.svg`, file, 'image/svg+xml; charset=utf-8');
  }
  return assets;
}

/** The nearest directory above `from` holding the UI sources: the repository, from `src/api` or `dist/src/api`. */
function checkoutRoot(from: string): string | null {
  for (let dir = from; dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, 'src', 'ui', 'index.html'))) return dir;
  }
  return null;
}
