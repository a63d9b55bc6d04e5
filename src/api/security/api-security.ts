import { TLSSocket } from 'node:tls';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { StatorConfig } from '../../config/config.types';
import { Allowlist, resolveAllowlist } from '../../security/allowlist';
import { basicAuthChecker } from '../../security/basic-auth';
import { MemberAllowlist, memberAllowlist, MemberApiUrls } from '../../security/member-allowlist';

/** The settings the API's access checks depend on. */
export type ApiSecurityConfig = Pick<StatorConfig, 'restapi' | 'compat'>;

/** Methods that only read: the reference never checks them, whatever the configuration. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Routes whose reads expose configuration and history, checked like unsafe requests with
 * `authentication_scope: admin`. Matched on the route the router chose, so no spelling of the URL
 * (`/%63onfig`, `/config/`) can reach them unchecked.
 */
export const ADMIN_READ_ROUTES: ReadonlySet<string> = new Set([
  '/config',
  '/cluster',
  '/history',
  '/schedule',
  '/events',
  '/events/stream',
  '/events/checkpoint',
  '/ui',
  '/ui/assets/:name',
  '/ui/statecharts/:file',
]);

const PLAIN_TEXT = 'text/plain; charset=utf-8';

/** The route the leader calls on every member in failsafe mode. */
const FAILSAFE_ROUTE = '/failsafe';

/**
 * Installs the reference's access checks (spec 1.10) on every unsafe request (any method but GET, HEAD and OPTIONS)
 * and, with `authentication_scope: admin`, on the reads of ADMIN_READ_ROUTES,
 * in its order: allowlist and, with `allowlist_include_members`, the members' hosts from `memberApiUrls` (403 `Access
 * is denied`), client certificate when `verify_client` is optional or required
 * (403 `client certificate required`), basic auth (401 with `WWW-Authenticate`). Nothing is installed when none of
 * them is configured.
 *
 * A Fastify `onRequest` hook rather than a Nest guard: it runs before the body is read and parsed, so an unauthorised
 * client cannot make the node parse a large or malformed body (it gets 401/403, not 400 or 413, as from the
 * reference, which checks before reading the content), and it covers every route, present and future, without each
 * controller having to opt in. Must be called before the Nest application registers its routes.
 */
export async function installApiSecurity(
  fastify: FastifyInstance,
  config: ApiSecurityConfig,
  warn: (message: string) => void,
  memberApiUrls: MemberApiUrls = () => [],
): Promise<void> {
  const { restapi } = config;
  const allowlist: Allowlist | null = restapi.allowlist?.length
    ? await resolveAllowlist(restapi.allowlist, warn)
    : null;
  // As the reference: with allowlist_include_members the address check applies even when the allowlist is empty.
  const members: MemberAllowlist | null = restapi.allowlist_include_members
    ? memberAllowlist(memberApiUrls, warn)
    : null;
  const checksAddress = allowlist !== null || members !== null;
  const requiresClientCertificate = restapi.verify_client === 'optional' || restapi.verify_client === 'required';
  const checkCredentials = restapi.authentication ? basicAuthChecker(restapi.authentication) : null;
  if (!checksAddress && !requiresClientCertificate && !checkCredentials) return;
  const challenge = `Basic realm="${config.compat === 'patroni' ? 'Patroni' : 'Stator'}"`;

  const checksAdminReads = restapi.authentication_scope === 'admin';
  const check = async (request: FastifyRequest, reply: FastifyReply) => {
    // As the reference, POST /failsafe skips the members check: the leader calls it while etcd is out of reach, when
    // the member list may be stale, and a refusal would make it demote.
    const checksMembers = members !== null && request.routeOptions.url !== FAILSAFE_ROUTE;
    if (allowlist || checksMembers) {
      const client = request.socket.remoteAddress;
      const allowed = (allowlist?.allows(client) ?? false) || (checksMembers && (await members.allows(client)));
      if (!allowed) return reply.code(403).type(PLAIN_TEXT).send('Access is denied');
    }
    if (requiresClientCertificate && !hasVerifiedClientCertificate(request)) {
      return reply.code(403).type(PLAIN_TEXT).send('client certificate required');
    }
    const failure = checkCredentials?.(request.headers.authorization);
    if (failure) {
      return reply.code(401).header('www-authenticate', challenge).type(PLAIN_TEXT).send(failure);
    }
  };
  // Health checks and other open reads pass synchronously: an async hook would cost every request a promise.
  fastify.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => {
    if (
      SAFE_METHODS.has(request.method) &&
      !(checksAdminReads && ADMIN_READ_ROUTES.has(request.routeOptions.url ?? ''))
    )
      return done();
    // As Fastify runs an async hook: on, whether or not it answered (Fastify skips the rest once an answer is sent).
    check(request, reply).then(() => done(), done);
  });
}

/**
 * With `verify_client: optional` the handshake accepts any certificate (or none); only one that chains to `cafile`
 * counts here, as the reference's CERT_OPTIONAL would have refused any other during the handshake.
 */
function hasVerifiedClientCertificate(request: FastifyRequest): boolean {
  const socket = request.socket;
  return socket instanceof TLSSocket && socket.authorized;
}
