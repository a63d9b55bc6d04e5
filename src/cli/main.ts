import './load-dependencies-lightly';
import 'reflect-metadata';
import { Server as HttpsServer } from 'node:https';
import { AppModule, fatal, NodeLifecycle } from '../app.module';
import { runAudit } from '../audit/audit-cli';
import { createHttpApp, splitListen } from '../api/http-server';
import { DCS } from '../common/tokens';
import { Dcs } from '../dcs/dcs.port';
import { withSrvEndpoints } from '../dcs/etcd/etcd-srv-discovery';
import { HaNode } from '../ha/ha-node';
import { namesakeIsRunning } from '../ha/namesake';
import { createPeerProbe } from '../ha/peer-probe';
import { httpsServerOptions, peerTlsOptions } from '../security/tls';
import { ConfigError, loadConfig } from '../config/load-config';
import { createConfiguredLogger, Logger } from '../common/logger';
import { createServiceNotifier, takeNotifySocket } from '../common/service-notifier';
import { STATOR_VERSION } from '../version';
import { VALIDATE_USAGE, validateConfig, wantsValidation } from './validate-config';

const USAGE = `usage: stator <config.yml>
       stator --version
${VALIDATE_USAGE}
       stator audit <verify|export|replay> ...   (stator audit --help)

Runs the Stator agent for one PostgreSQL node. The configuration file uses Patroni's schema;
PATRONI_* and STATOR_* environment variables override it (see docs/configuration.md).
--validate-config checks the file (and the environment) and exits 0, or 1 with one line per problem;
--print also writes the resulting configuration, passwords hidden.`;

/** `stator <config.yml>`: starts the agent; exits 1 with one line per problem on a bad configuration. */
export async function main(argv: string[]): Promise<void> {
  // Only the agent talks to systemd: no child (PostgreSQL, fence, callbacks) may inherit the socket.
  const notifySocket = takeNotifySocket(process.env);
  if (argv[0] === 'audit') {
    process.exitCode = await runAudit(argv.slice(1), {
      stdout: (text) => process.stdout.write(text),
      stderr: (text) => process.stderr.write(text),
      env: process.env,
    });
    return;
  }
  if (wantsValidation(argv)) {
    process.exitCode = validateConfig(argv, {
      stdout: (text) => process.stdout.write(text),
      stderr: (text) => process.stderr.write(text),
      env: process.env,
    });
    return;
  }
  if (argv.includes('--version')) {
    process.stdout.write(`stator ${STATOR_VERSION}\n`);
    return;
  }
  if (argv.includes('--help') || argv.includes('-h') || argv.length > 1) {
    process.stdout.write(`${USAGE}\n`);
    process.exitCode = argv.length > 1 ? 2 : 0;
    return;
  }
  let loaded;
  try {
    loaded = loadConfig(argv[0] ?? null, process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    for (const problem of error.problems) process.stderr.write(`${problem}\n`);
    process.exit(1);
  }
  const { config } = loaded;
  let log: Logger;
  try {
    // One logger for the whole agent: with log.dir, one rotated file.
    log = createConfiguredLogger(config.log, `${config.compat === 'patroni' ? 'patroni' : 'stator'}.log`);
  } catch (error) {
    process.stderr.write(`log.dir: ${(error as Error).message}\n`);
    process.exit(1);
  }
  for (const warning of loaded.warnings) log.warning(warning);
  try {
    // etcd3.srv: the endpoints come from DNS, once, before anything reaches etcd (every question has a deadline).
    config.etcd3 = await withSrvEndpoints(config.etcd3, log);
  } catch (error) {
    log.critical((error as Error).message);
    process.exit(1);
  }
  // The fence's interpreter (fence.python) sends the datagrams too: one Python to install.
  const notifier = createServiceNotifier(notifySocket, log, config.fence.python);

  // POST /reload and SIGHUP read the same file and environment again; an invalid file keeps the running configuration.
  const reloadConfig = () => loadConfig(argv[0] ?? null, process.env).config;
  let app: Awaited<ReturnType<typeof createHttpApp>>;
  // For allowlist_include_members: the members as the node last read them from the DCS (none before it starts).
  const memberApiUrls = () =>
    app
      .get(HaNode)
      .view()
      .cluster?.members.map((member) => member.data.api_url) ?? [];
  try {
    // The client certificate for the other members' APIs (ctl.certfile, as Patroni's agent) is checked before anything starts.
    peerTlsOptions(config.restapi, config.ctl);
    app = await createHttpApp(AppModule.forConfig(config, { reloadConfig, logger: log }), config, {
      memberApiUrls,
      warn: log.warning,
    });
  } catch (error) {
    // A TLS file that cannot be used (wrong keyfile_password, a cipher list OpenSSL rejects): the message names the key.
    if (!(error instanceof Error && /^(restapi|ctl)\./.test(error.message))) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
  const lifecycle = app.get(NodeLifecycle);
  const { host, port } = splitListen(config.restapi.listen);
  // Before our own API listens: whatever answers at the member key's address is another agent, even at our address.
  if (await namesakeIsRunning(app.get<Dcs>(DCS), createPeerProbe(config.restapi, config.ctl), config.name)) {
    log.critical(`Can't start; there is already a node named '${config.name}' running`);
    process.exit(1);
  }
  // request_queue_size: the socket's listen backlog. Unset, Node's 511 rather than Patroni's 5: one thread serves every
  // connection here, and a burst of health checks during a pause of the event loop must queue, not be dropped.
  await app.listen({
    port,
    host,
    ...(config.restapi.request_queue_size ? { backlog: config.restapi.request_queue_size } : {}),
  });
  log.info(`stator ${STATOR_VERSION}: node ${config.name} of ${config.scope}, API on ${config.restapi.listen}`);
  await lifecycle.start();
  // Up as for the reference: the API listens and the HA loop runs. A reload is done once the cycle has read the file.
  app.get(HaNode).watchReloads({ requested: () => void notifier.reloading(), done: () => void notifier.ready() });
  await notifier.ready();

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info(`received ${signal}, shutting down`);
    // Explicit exit: HTTP keep-alive sockets and etcd streams must not keep the process alive.
    notifier
      .stopping()
      .then(() => app.close())
      .catch((error) => log.error(`shutdown failed: ${String(error)}`))
      .finally(() => process.exit(process.exitCode ?? 0));
  };
  fatal.on('fatal', (reason) => {
    log.critical(reason);
    process.exitCode = 1;
    shutdown('a fatal error');
  });
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  // What operators and systemd's ExecReload send to reload, as for the reference: never a reason to stop.
  process.on('SIGHUP', () => {
    log.info('received SIGHUP, reloading the configuration');
    app.get(HaNode).requestReload();
    reloadApiCertificates(app.getHttpServer(), argv[0] ?? null, log);
  });
  // Node's default for SIGUSR2 is to exit; nothing in the agent uses it, so it must not end a leader's term by accident.
  process.on('SIGUSR2', () => log.warning('received SIGUSR2, ignored'));
}

/** New certificate files for the API's HTTPS server (connections already open keep theirs). */
function reloadApiCertificates(server: unknown, path: string | null, log: Logger): void {
  if (!(server instanceof HttpsServer)) return;
  try {
    const options = httpsServerOptions(loadConfig(path, process.env).config.restapi);
    if (options) server.setSecureContext(options);
    log.info('API certificates reloaded');
  } catch (error) {
    log.error(`reloading the API certificates failed, keeping the current ones: ${(error as Error).message}`);
  }
}
