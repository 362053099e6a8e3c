#!/usr/bin/env node
// Runs the toolpin binary of this platform's @toolpin/cli-* package with the
// arguments, stdio and exit code passed through.
"use strict";

const { spawnSync } = require("node:child_process");
const { binaryPath } = require("../lib/platform.js");

let binary;
try {
  binary = binaryPath();
} catch (e) {
  process.stderr.write(`error: ${e.message}\n`);
  process.exit(2);
}
const run = spawnSync(binary, process.argv.slice(2), { stdio: "inherit" });
if (run.error) {
  process.stderr.write(`error: cannot run ${binary}: ${run.error.message}\n`);
  process.exit(2);
}
if (run.signal) process.kill(process.pid, run.signal);
process.exit(run.status === null ? 2 : run.status);
