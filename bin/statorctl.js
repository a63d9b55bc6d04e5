#!/usr/bin/env node
require('../dist/src/ctl/main.js').main(process.argv.slice(2));
