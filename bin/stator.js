#!/usr/bin/env node
require('../dist/src/cli/main.js').main(process.argv.slice(2));
