#!/usr/bin/env bash
# The toolpin GitHub Action's install step: puts a `toolpin` on PATH.
#
# With TOOLPIN_USE_PREINSTALLED=true, checks that one is already on PATH
# and does nothing else. Otherwise builds the action's own checkout
# ($GITHUB_ACTION_PATH) with
#   cargo install --locked --path "$GITHUB_ACTION_PATH/crates/toolpin" --root DIR
# unless DIR/bin/toolpin is already there (restored from the cache), and
# adds DIR/bin to GITHUB_PATH for the steps that follow.
#
# Environment: TOOLPIN_USE_PREINSTALLED ("true"/"false"), TOOLPIN_INSTALL_DIR
# (DIR, from cache-key.sh), GITHUB_ACTION_PATH, GITHUB_PATH.
set -euo pipefail

if [ "${TOOLPIN_USE_PREINSTALLED:-false}" = true ]; then
    if ! command -v toolpin >/dev/null 2>&1; then
        echo "::error title=toolpin::use-preinstalled is true but no toolpin is on PATH"
        exit 2
    fi
    echo "toolpin action: using $(command -v toolpin) ($(toolpin --version))"
    exit 0
fi

dir="${TOOLPIN_INSTALL_DIR:?TOOLPIN_INSTALL_DIR is not set}"
src="${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is not set}/crates/toolpin"
if [ -x "$dir/bin/toolpin" ] && "$dir/bin/toolpin" --version >/dev/null 2>&1; then
    echo "toolpin action: using the cached $dir/bin/toolpin ($("$dir/bin/toolpin" --version))"
else
    if ! command -v cargo >/dev/null 2>&1; then
        echo "::error title=toolpin::cargo is not on PATH: install a Rust toolchain (1.85 or newer) before this action, or set use-preinstalled"
        exit 2
    fi
    echo "toolpin action: building toolpin from $src"
    cargo install --locked --path "$src" --root "$dir"
fi
echo "$dir/bin" >>"${GITHUB_PATH:-/dev/null}"
"$dir/bin/toolpin" --version
