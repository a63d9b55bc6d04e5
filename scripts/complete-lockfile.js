#!/usr/bin/env node
/**
 * Completes package-lock.json with the optional, platform-specific binaries (other operating
 * systems and CPUs) that the registry reachable here does not serve. Without their entries
 * `npm ci` refuses the lock as "out of sync"; npm skips them at install anyway, because their
 * `os`/`cpu` do not match. Run after every `npm install`: `npm run lockfile`.
 */
const fs = require('node:fs');
const path = require('node:path');

const OSES = ['darwin', 'win32', 'android', 'freebsd', 'openharmony', 'linux'];
const CPUS = ['arm64', 'x64', 'ia32', 'arm', 'ppc64', 's390x', 'riscv64', 'loong64', 'wasm32'];

const file = path.join(__dirname, '..', 'package-lock.json');
const lock = JSON.parse(fs.readFileSync(file, 'utf8'));
const added = [];
for (const entry of Object.values(lock.packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const key = `node_modules/${name}`;
    if (lock.packages[key]) continue;
    const stub = { version, optional: true };
    if (entry.dev) stub.dev = true;
    const os = OSES.find((candidate) => name.includes(candidate));
    const cpu = CPUS.find((candidate) => name.includes(`-${candidate}`));
    if (os) stub.os = [os];
    if (cpu) stub.cpu = [cpu];
    lock.packages[key] = stub;
    added.push(`${name}@${version}`);
  }
}
fs.writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
process.stdout.write(
  added.length ? `added ${added.length} platform stubs: ${added.join(', ')}\n` : 'lock file complete\n',
);
