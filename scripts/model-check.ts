import { runModelCheck } from '../src/model-check/cli';

/** `npm run model-check`: see src/model-check/cli.ts and docs/chaos-and-safety.md, "Model checking". */
process.exitCode = runModelCheck(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
});
