#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node
require('../dist/src/cli/main.js').main(process.argv.slice(2));
