/* eslint-disable @typescript-eslint/no-require-imports -- a module loader: it requires modules by computed path, and typescript (a devDependency) only when mutants run */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import type * as Ts from 'typescript';
import { DECISION_CODE_MODULES, DecisionCode } from './decision-code';

/**
 * Loads a private copy of the decision code (every module under src/ha/ that decide() and the sync
 * planners reach) from its TypeScript source, with one file's text replaced: the mutation run's
 * input. Modules outside src/ha/ are the shared ones. The copy is compiled by TypeScript's own
 * transpiler (a development dependency: only `npm run model-check -- --mutants` and its test load it).
 */

/** The project's src/ (where the .ts files are), found from this file in src/ or in dist/src/. */
export function sourceRoot(): string {
  for (let dir = __dirname; dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, 'src', 'ha', 'decide.ts'))) return join(dir, 'src');
  }
  throw new Error('the TypeScript sources (src/ha/decide.ts) are not found above ' + __dirname);
}

/** Where the running code's modules are: src/ under Jest, dist/src/ when built. */
const runtimeRoot = resolve(__dirname, '..');

const transpiled = new Map<string, string>();

function transpile(file: string, text: string): string {
  const key = `${file}\n${text}`;
  let js = transpiled.get(key);
  if (js === undefined) {
    const ts = require('typescript') as typeof Ts;
    js = ts.transpileModule(text, {
      fileName: file,
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
    }).outputText;
    transpiled.set(key, js);
  }
  return js;
}

/** The decision code with `replaced` (paths relative to src/, e.g. `ha/decide.ts`) given as new text. */
export function loadDecisionCode(replaced: ReadonlyMap<string, string>): DecisionCode {
  const src = sourceRoot();
  const haDir = join(src, 'ha') + sep;
  const loaded = new Map<string, { exports: Record<string, unknown> }>();
  const load = (file: string): Record<string, unknown> => {
    const known = loaded.get(file);
    if (known) return known.exports;
    const mod = { exports: {} as Record<string, unknown> };
    loaded.set(file, mod);
    const rel = relative(src, file).split(sep).join('/');
    const text = replaced.get(rel) ?? readFileSync(file, 'utf8');
    const localRequire = (spec: string): unknown => {
      if (!spec.startsWith('.')) return require(spec);
      const target = resolve(dirname(file), spec);
      if ((target + sep).startsWith(haDir) && existsSync(`${target}.ts`)) return load(`${target}.ts`);
      // Outside src/ha/: the module the rest of the process uses (compiled, under dist/ when built).
      return require(join(runtimeRoot, relative(src, target)));
    };
    new Function('exports', 'require', 'module', '__filename', '__dirname', transpile(file, text))(
      mod.exports,
      localRequire,
      mod,
      file,
      dirname(file),
    );
    return mod.exports;
  };
  const code: Record<string, unknown> = {};
  for (const [name, rel] of Object.entries(DECISION_CODE_MODULES)) code[name] = load(join(src, rel))[name];
  return code as unknown as DecisionCode;
}
