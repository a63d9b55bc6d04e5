import { accessSync, constants, existsSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';

/**
 * Where the fence program is and what runs it. The fence is a Python program on the standard library
 * alone (`src/postgresql/fence/fence_main.py`): a Python interpreter holds about 10 MiB resident against
 * Node's 40, and the fence runs beside every postmaster for its whole life.
 */
export interface FenceProgram {
  interpreter: string;
  script: string;
}

/**
 * `-s -S`: no user or site packages, only the standard library; `-B`: no bytecode files written beside
 * the program (the install may be read-only). Not `-E`/`-I`: those would also ignore PYTHONCOERCECLOCALE.
 */
const INTERPRETER_FLAGS = ['-s', '-S', '-B'];

/** Python's C-locale coercion would rewrite LC_CTYPE in the environment the postmaster inherits from the fence. */
const FENCE_ENV = { PYTHONCOERCECLOCALE: '0' };

export function fenceCommand(
  program: FenceProgram,
  launchJson: string,
): { file: string; args: string[]; env: Record<string, string> } {
  return { file: program.interpreter, args: [...INTERPRETER_FLAGS, program.script, launchJson], env: FENCE_ENV };
}

/** The fence beside this module in `dist/`, or in the sources beside the TypeScript (jest runs from there too). */
export function defaultFenceProgram(interpreter = pythonInterpreter()): FenceProgram {
  const script = [
    join(__dirname, '..', 'fence', 'fence_main.py'),
    resolve(__dirname, '..', '..', '..', 'src', 'postgresql', 'fence', 'fence_main.py'),
  ].find((path) => existsSync(path));
  return { interpreter, script: script ?? join(__dirname, '..', 'fence', 'fence_main.py') };
}

/** Without `fence.python`: Debian's `/usr/bin/python3`, else the first `python3` on PATH. */
export function pythonInterpreter(env: NodeJS.ProcessEnv = process.env): string {
  const candidates = [
    '/usr/bin/python3',
    ...(env.PATH ?? '')
      .split(delimiter)
      .filter(Boolean)
      .map((dir) => join(dir, 'python3')),
  ];
  return candidates.find(isExecutable) ?? 'python3';
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
