#!/usr/bin/env bash
# The toolpin GitHub Action's cache key step: a key for the built binary
# that changes whenever the action's Rust sources change.
#
# The action's checkout ($GITHUB_ACTION_PATH, or the first argument) is
# hashed rather than keyed on `github.action_ref`, which is empty inside
# composite actions (actions/runner#2473) and would be wrong for a moving
# ref such as @main anyway. Hashed: Cargo.lock, the Cargo.toml files and
# every file under crates/*/src.
#
# Sets the step outputs `key` (toolpin-<os>-<arch>-<hash>) and `dir` (where
# install.sh puts the binary: <dir>/bin/toolpin, under RUNNER_TOOL_CACHE).
set -euo pipefail

root="${1:-${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is not set}}"
output="${GITHUB_OUTPUT:-/dev/null}"
[ -f "$root/Cargo.lock" ] || { echo "toolpin action: no Cargo.lock in $root" >&2; exit 2; }

if command -v sha256sum >/dev/null 2>&1; then
    sha() { sha256sum; }
else
    sha() { shasum -a 256; }
fi

hash="$(
    cd "$root"
    # Paths in a fixed order, each file's hash with its path.
    find Cargo.lock Cargo.toml crates -type f \
        \( -name Cargo.toml -o -name Cargo.lock -o -path 'crates/*/src/*' \) |
        LC_ALL=C sort |
        while IFS= read -r f; do
            printf '%s  %s\n' "$(sha <"$f" | cut -d' ' -f1)" "$f"
        done |
        sha | cut -c1-32
)"

os="${RUNNER_OS:-$(uname -s)}"
arch="${RUNNER_ARCH:-$(uname -m)}"
# One directory per key, so a runner that keeps its tool cache between jobs
# never runs a binary built from other sources.
dir="${RUNNER_TOOL_CACHE:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}}/toolpin-action/$hash"
echo "key=toolpin-$os-$arch-$hash" >>"$output"
echo "dir=$dir" >>"$output"
echo "toolpin action: cache key toolpin-$os-$arch-$hash, install dir $dir"
