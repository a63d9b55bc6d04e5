/**
 * Entry point of the fence program: `node fence-main.js '<FenceLaunchOptions as JSON>'`.
 *
 * The agent spawns it detached (own session and process group, stdout/stderr to
 * `<state_dir>/fence.log`) once per postmaster life. It starts the postmaster, serves
 * `<state_dir>/fence.sock`, enforces the dead man's switch, records the exit in
 * `<state_dir>/postmaster-exit.json` and exits when the postmaster does. See `fence.ts`.
 */
import { Fence } from './fence';
import { FenceLaunchOptions } from './fence-protocol';

function log(message: string): void {
  process.stderr.write(`${new Date().toISOString()} fence[${process.pid}] ${message}\n`);
}

function parseOptions(argument: string | undefined): FenceLaunchOptions {
  if (!argument) throw new Error('usage: fence-main.js <options as JSON>');
  const options = JSON.parse(argument) as FenceLaunchOptions;
  for (const key of ['dataDir', 'binDir', 'stateDir'] as const) {
    if (typeof options[key] !== 'string' || !options[key]) throw new Error(`fence option ${key} is missing`);
  }
  return options;
}

function main(): void {
  let options: FenceLaunchOptions;
  try {
    options = parseOptions(process.argv[2]);
  } catch (error) {
    log(String(error));
    process.exit(64);
  }
  const fence = new Fence(options, log, (exitCode) => {
    log(`exiting (${exitCode})`);
    process.exit(exitCode);
  });
  // A fence that dies leaves its postmaster unfenced, so signals aimed at the fence stop the postmaster
  // (fast) and the fence exits with it. SIGHUP (no terminal: detached) is ignored.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => fence.stopPostmasterFast(`fence got ${signal}`));
  process.on('SIGHUP', () => log('ignored SIGHUP'));
  // Keep the switch alive through unexpected bugs: a crashed fence would be worse than a logged error.
  process.on('uncaughtException', (error) => log(`uncaught: ${error.stack ?? String(error)}`));
  process.on('unhandledRejection', (error) => log(`unhandled rejection: ${String(error)}`));
  fence.run().catch((error) => {
    // No agent could ever reach (or arm) this postmaster: take it down rather than leave it unfenced.
    fence.stopPostmasterFast(`fence failed: ${String(error)}`);
  });
}

main();
