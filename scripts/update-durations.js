#!/usr/bin/env node
/**
 * Rewrites test/durations.json, the spec files' durations that test/sequencer.js starts longest first, from the log of
 * a CI run (`bash .ci/run > ci.log 2>&1`): `node scripts/update-durations.js ci.log`. Jest prints a file's time only
 * when it took 5 s or more, so the list holds those; the first time a file appears counts (the main Node line's run).
 */
const fs = require('node:fs');
const path = require('node:path');

const [logFile] = process.argv.slice(2);
if (!logFile) {
  console.error('usage: node scripts/update-durations.js <CI log>');
  process.exit(2);
}
const durations = {};
for (const match of fs
  .readFileSync(logFile, 'utf8')
  .matchAll(/^(?:PASS|FAIL) \S+ (\S+[.-]spec\.ts) \(([\d.]+) s\)/gm)) {
  durations[match[1]] ??= Math.round(Number(match[2]) * 10) / 10;
}
if (Object.keys(durations).length === 0) {
  console.error(`${logFile}: no line 'PASS <project> <file> (<seconds> s)'; test/durations.json left as it was`);
  process.exit(1);
}
const sorted = Object.fromEntries(Object.entries(durations).sort(([, a], [, b]) => b - a));
fs.writeFileSync(path.join(__dirname, '..', 'test', 'durations.json'), JSON.stringify(sorted, null, 2) + '\n');
console.log(`test/durations.json: ${Object.keys(sorted).length} spec files`);
