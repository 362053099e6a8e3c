// Which @toolpin/cli-* package holds the binary for this machine. npm
// installs only the optional dependency whose `os`, `cpu` and `libc` match,
// so there is no install script and no download.
"use strict";

const path = require("node:path");

function isMusl() {
  if (process.platform !== "linux") return false;
  const report = process.report && process.report.getReport ? process.report.getReport() : null;
  const header = report && (typeof report === "string" ? JSON.parse(report).header : report.header);
  return !(header && header.glibcVersionRuntime);
}

function platformPackage() {
  const cpu = process.arch;
  const os = process.platform;
  return `@toolpin/cli-${os}-${cpu}${isMusl() ? "-musl" : ""}`;
}

function binaryPath() {
  const pkg = platformPackage();
  const exe = process.platform === "win32" ? "toolpin.exe" : "toolpin";
  let manifest;
  try {
    manifest = require.resolve(`${pkg}/package.json`);
  } catch {
    throw new Error(
      `toolpin: no binary for ${process.platform}-${process.arch}: the optional dependency ${pkg} is not installed ` +
        "(installed with --no-optional or --omit=optional, or no build for this platform); reinstall toolpin with optional dependencies"
    );
  }
  return path.join(path.dirname(manifest), "bin", exe);
}

module.exports = { platformPackage, binaryPath };
