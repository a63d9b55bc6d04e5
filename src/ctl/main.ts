import { STATOR_VERSION } from '../version';
import { COMMANDS, EXIT, parseCommandLine, UsageError } from './args';
import { ApiError, UnreachableError } from './client';
import { CtlIo, OperationFailed } from './context';
import { linePrompter } from './prompt';
import { connect, resolveTarget } from './target';
import { COMMAND_RUNNERS, LOCAL_COMMANDS } from './commands';

export const USAGE = `usage: statorctl [--api URL | -c stator.yml] [--format table|json|yaml] <command> [args]

reach the cluster through any member's API:
  --api URL            a member's API (http[s]://host:port), or STATORCTL_API
  -c, --config FILE    a node's configuration (Patroni's schema): members from etcd, else restapi.connect_address;
                       credentials and TLS from ctl.* and restapi.* (or STATORCTL_CONFIG)
  --auth USER:PASS     basic auth (or STATORCTL_AUTH; default ctl.authentication, restapi.authentication)
  --cacert, --cert, --key FILE, --insecure   TLS
  --timeout SECONDS    deadline of each request (default 10)
  --format FORMAT      table (default), json or yaml

commands:
${Object.entries(COMMANDS)
  .map(([, spec]) => `  ${spec.usage}\n      ${spec.summary}`)
  .join('\n')}

exit codes: 0 success, 1 the operation failed or was refused, 2 usage error`;

/** `statorctl ...`: resolves with the exit code; nothing is thrown for a person's mistake or an unreachable cluster. */
export async function runStatorctl(argv: string[], io: CtlIo): Promise<number> {
  try {
    const line = parseCommandLine(argv);
    if (line.command === 'help') {
      const spec = line.args[0] ? COMMANDS[line.args[0]] : undefined;
      io.stdout(spec ? `usage: statorctl ${spec.usage}\n  ${spec.summary}\n` : `${USAGE}\n`);
      return EXIT.ok;
    }
    if (line.command === 'version') {
      io.stdout(`statorctl ${STATOR_VERSION}\n`);
      return EXIT.ok;
    }
    const local = LOCAL_COMMANDS[line.command];
    if (local) return await local(line, io);
    const target = await resolveTarget(line.values, io.env, line.timeoutMs);
    const client = await connect(target);
    try {
      return await COMMAND_RUNNERS[line.command]({ line, io, client });
    } finally {
      await client.close();
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`statorctl: ${error.message}\n(statorctl --help for usage)\n`);
      return EXIT.usage;
    }
    if (error instanceof OperationFailed || error instanceof ApiError || error instanceof UnreachableError) {
      io.stderr(`Error: ${error.message}\n`);
      return EXIT.failed;
    }
    io.stderr(`statorctl: unexpected error: ${(error as Error).message ?? String(error)}\n`);
    return EXIT.failed;
  } finally {
    io.prompter.close();
  }
}

/**
 * The `statorctl` binary: the process's streams. Ctrl-C ends `--watch` and `--follow` normally
 * (exit 0); anywhere else (a prompt, an operation being followed) it stops statorctl at once with
 * 130, as a shell does; an operation already sent goes on in the cluster.
 */
export function main(argv: string[]): void {
  let interrupt: () => void = () => undefined;
  const interrupted = new Promise<void>((resolve) => (interrupt = resolve));
  const follows = argv.some((arg) => ['--watch', '-W', '--follow', '-f'].includes(arg));
  process.on('SIGINT', () => {
    if (follows) return interrupt();
    process.stdout.write('\n');
    process.exit(130);
  });
  const io: CtlIo = {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    env: process.env,
    prompter: linePrompter(process.stdin, process.stdout),
    isTty: process.stdout.isTTY === true,
    interrupted,
  };
  void runStatorctl(argv, io).then((code) => {
    process.exitCode = code;
    // Open sockets (event streams, keep-alive) must not keep the process alive.
    process.stdout.write('', () => process.exit(code));
  });
}
