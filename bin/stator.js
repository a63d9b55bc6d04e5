#!/usr/bin/env -S node --max-semi-space-size=4
require('../dist/src/cli/main.js').main(process.argv.slice(2));
