import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AGENT_ENVIRONMENT, AGENT_NODE_FLAGS } from '../../src/cli/agent-node-flags';
import { log } from './util';

/**
 * One way of running the agent, for measuring two codes or two launch settings side by side: a
 * checkout holding `bin/stator.js` and `dist/`, the Node flags and the environment it starts with.
 */
export interface AgentVariant {
  label: string;
  /** A directory with `bin/stator.js` and a built `dist/`. */
  checkout: string;
  nodeFlags: string[];
  env: Record<string, string>;
}

/** This checkout as every launcher starts it (src/cli/agent-node-flags.ts). */
export function currentVariant(repoRoot: string, label = 'current'): AgentVariant {
  return { label, checkout: repoRoot, nodeFlags: [...AGENT_NODE_FLAGS], env: { ...AGENT_ENVIRONMENT } };
}

/**
 * `commit` of this repository, extracted with `git archive` into `dir` and built (its `npm run build`)
 * with this checkout's node_modules. Started as that
 * commit's own launcher did: `node bin/stator.js`, no flags (the commits measured here predate them;
 * pass others in `nodeFlags`/`env`).
 */
export function commitVariant(repoRoot: string, commit: string, dir: string, label = commit): AgentVariant {
  if (!/^\w[\w./-]*$/.test(commit)) throw new Error(`not a commit or branch name: ${commit}`);
  const checkout = join(dir, `stator-${commit.replace(/[^\w.-]/g, '_')}`);
  if (!existsSync(join(checkout, 'dist', 'src', 'cli', 'main.js'))) {
    log(`building ${commit} in ${checkout} (git archive, npm run build)...`);
    mkdirSync(checkout, { recursive: true });
    const archive = execFileSync('git', ['-C', repoRoot, 'archive', '--format=tar', commit], { maxBuffer: 1 << 30 });
    execFileSync('tar', ['-x', '-C', checkout], { input: archive });
    if (!existsSync(join(checkout, 'node_modules')))
      symlinkSync(join(repoRoot, 'node_modules'), join(checkout, 'node_modules'));
    // The commit's own build: later ones copy files tsc does not emit (the Python fence) into dist.
    execFileSync('npm', ['run', '--silent', 'build'], { cwd: checkout, stdio: 'inherit' });
  }
  return { label, checkout, nodeFlags: [], env: {} };
}

/** A shell script that starts the variant's agent on the config file it is given (LocalCluster's agentProgram). */
export function writeLauncher(variant: AgentVariant, dir: string): string {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `launch-${variant.label.replace(/[^\w.-]/g, '_')}.sh`);
  const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;
  // The cluster's launcher passes the agents' environment (AGENT_ENVIRONMENT): a variant without a name has it removed.
  const unset = Object.keys(AGENT_ENVIRONMENT)
    .filter((name) => !(name in variant.env))
    .flatMap((name) => ['-u', name]);
  const env = Object.entries(variant.env).map(([name, value]) => quote(`${name}=${value}`));
  const command = [
    ...unset,
    ...env,
    quote(process.execPath),
    ...variant.nodeFlags.map(quote),
    quote(join(variant.checkout, 'bin', 'stator.js')),
  ];
  writeFileSync(path, `#!/bin/sh\nexec env ${command.join(' ')} "$@"\n`);
  chmodSync(path, 0o755);
  return path;
}

/**
 * `label[:commit=sha][:flags=a b][:env=A=1 B=2][:checkout=/dir]`, `;`-separated (BENCH_HEALTH_VARIANTS): variants of
 * this checkout as it is launched, or of a commit (built, started with no flags). An empty `flags=` or `env=` starts without any.
 */
export function parseVariants(spec: string, repoRoot: string, buildDir: string): AgentVariant[] {
  return spec
    .split(';')
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const [label, ...optionTexts] = part.split(':');
      const options = optionTexts.map((option) => {
        const at = option.indexOf('=');
        return at < 0 ? [option, ''] : [option.slice(0, at), option.slice(at + 1)];
      });
      const commit = options.find(([key]) => key === 'commit')?.[1];
      const variant = commit ? commitVariant(repoRoot, commit, buildDir, label) : currentVariant(repoRoot, label);
      for (const [key, value] of options) {
        const words = value.split(' ').filter(Boolean);
        if (key === 'commit') continue;
        else if (key === 'flags') variant.nodeFlags = words;
        else if (key === 'env')
          variant.env = Object.fromEntries(words.map((w) => [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)]));
        else if (key === 'checkout') variant.checkout = value;
        else throw new Error(`BENCH_HEALTH_VARIANTS: unknown option ${key} in ${part} (commit, flags, env, checkout)`);
      }
      return variant;
    });
}
