#!/usr/bin/env node
import { runRulesCli } from './cli';

runRulesCli(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    // One line, no stack: what failed, not where in our code.
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`infersignal-rules: ${message.split('\n', 1)[0]}\n`);
    process.exitCode = 1;
  },
);
