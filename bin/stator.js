#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=2
require('../dist/src/cli/main.js').main(process.argv.slice(2));
