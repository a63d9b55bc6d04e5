import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import {
  agentWrapper,
  CONFFILES,
  CONFIG_DIR,
  controlFile,
  ctlWrapper,
  LIB_DIR,
  postinst,
  postrm,
  prerm,
  UNIT_PATH,
} from './lib/debian-package';

/**
 * `npm run package [-- --out <dir>]`: builds stator_<version>_all.deb with dpkg-deb from the built tree
 * (`npm run build` first, which the npm script does) and the production dependencies, installed by
 * `npm ci --omit=dev` into the staging directory from the lockfile (npm's cache makes it quick).
 * Prints the package's path.
 */
const ROOT = resolve(__dirname, '..', '..');

function main(argv: string[]): void {
  const outIndex = argv.indexOf('--out');
  const outDir = resolve(outIndex >= 0 && argv[outIndex + 1] ? argv[outIndex + 1] : ROOT);
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    version: string;
    description: string;
  };
  const staging = mkdtempSync(join(tmpdir(), 'stator-package-'));
  try {
    const tree = join(staging, 'root');
    stageCode(join(tree, LIB_DIR));
    stageFiles(tree);
    const debian = join(tree, 'DEBIAN');
    mkdirSync(debian);
    const installedSizeKiB = Number(
      execFileSync('du', ['-sk', '--exclude=DEBIAN', tree], { encoding: 'utf8' }).split('\t')[0],
    );
    writeFileSync(
      join(debian, 'control'),
      controlFile({ version: manifest.version, description: manifest.description, installedSizeKiB }),
    );
    writeFileSync(join(debian, 'conffiles'), CONFFILES);
    for (const [name, text] of Object.entries({ postinst: postinst(), prerm: prerm(), postrm: postrm() }))
      writeExecutable(join(debian, name), text);
    mkdirSync(outDir, { recursive: true });
    const deb = join(outDir, `stator_${manifest.version}_all.deb`);
    // Files owned by root whatever user builds; gzip, as xz took a minute more in CI for 4 MiB less.
    execFileSync('dpkg-deb', ['--root-owner-group', '-Zgzip', '--build', tree, deb], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    process.stdout.write(`${deb}\n`);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** /usr/lib/stator: what the Docker image ships (bin, dist/src, dist/ui, src/ui, statecharts) and the production node_modules. */
function stageCode(lib: string): void {
  mkdirSync(lib, { recursive: true });
  for (const file of ['package.json', 'package-lock.json']) copyFileSync(join(ROOT, file), join(lib, file));
  execFileSync(
    'npm',
    ['ci', '--omit=dev', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'],
    {
      cwd: lib,
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  rmSync(join(lib, 'node_modules', '.package-lock.json'), { force: true });
  pruneForRuntime(join(lib, 'node_modules'));
  cpSync(join(ROOT, 'bin'), join(lib, 'bin'), { recursive: true });
  cpSync(join(ROOT, 'dist', 'src'), join(lib, 'dist', 'src'), {
    recursive: true,
    filter: (path) => !/\.(map|d\.ts)$/.test(path),
  });
  cpSync(join(ROOT, 'dist', 'ui'), join(lib, 'dist', 'ui'), { recursive: true });
  cpSync(join(ROOT, 'src', 'ui'), join(lib, 'src', 'ui'), { recursive: true });
  mkdirSync(join(lib, 'statecharts'));
  for (const svg of readdirSync(join(ROOT, 'statecharts')).filter((name) => name.endsWith('.svg'))) {
    copyFileSync(join(ROOT, 'statecharts', svg), join(lib, 'statecharts', svg));
  }
}

/**
 * Type declarations, source maps and documentation are never loaded at run time: without them the package holds
 * about half the files (11,800 before) and 46 MiB less, which is what dpkg's unpack and purge take time over.
 * Licence files stay.
 */
function pruneForRuntime(dir: string): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) pruneForRuntime(path);
    else if (/\.(d\.[cm]?ts|map|md|markdown)$/i.test(entry.name) && !/^licen[cs]e/i.test(entry.name)) rmSync(path);
  }
}

/** The wrappers, the unit, the example configuration and the documentation. */
function stageFiles(tree: string): void {
  writeExecutable(join(tree, 'usr/bin/stator'), agentWrapper());
  writeExecutable(join(tree, 'usr/bin/statorctl'), ctlWrapper());
  place(join(ROOT, 'deploy', 'stator.service'), join(tree, UNIT_PATH));
  place(join(ROOT, 'deploy', 'stator.yml'), join(tree, CONFIG_DIR, 'stator.yml'));
  const doc = join(tree, 'usr/share/doc/stator');
  for (const page of ['README.md']) place(join(ROOT, page), join(doc, page));
  for (const page of ['configuration.md', 'install-and-operate.md']) place(join(ROOT, 'docs', page), join(doc, page));
  place(join(ROOT, 'examples', 'stator.yml'), join(doc, 'examples', 'stator.yml'));
  writeFileSync(join(doc, 'copyright'), 'Stator, a PostgreSQL high-availability agent.\nLicense: MIT\n');
}

function place(from: string, to: string): void {
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(from, to);
  chmodSync(to, 0o644);
}

function writeExecutable(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  chmodSync(path, 0o755);
}

main(process.argv.slice(2));
