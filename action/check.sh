#!/usr/bin/env bash
# The toolpin GitHub Action's check step (action.yml), runnable anywhere:
# scripts/check-action runs it locally with GITHUB_OUTPUT and
# GITHUB_STEP_SUMMARY pointing at temporary files.
#
# Runs `toolpin check` once, from the current directory (the repository root
# in a workflow), with `--config <working-directory>/<config>` so that the
# lockfile paths in the SARIF results and annotations are relative to the
# repository root. Writes the text report to the log and the SARIF, Markdown
# and JSON reports to files, appends the Markdown to the step summary, and
# sets these step outputs from the JSON report:
#
#   exit-code           toolpin's exit code: 0 clean, 1 drift, 2 error
#   fingerprint         the catalog fingerprint of what is served now
#                       (fingerprints.after, 64 hex digits)
#   pinned-fingerprint  the lockfile's catalog fingerprint (fingerprints.before)
#   finding-count       summary.findings
#   failing-count       how many findings fail the policy (verdict.failing)
#   highest-severity    critical, high, medium, low or info; "none" when
#                       there is no finding
#   sarif-file, markdown-file, json-file   where the reports were written
#
# On exit 2 (an error) no report exists: exit-code is set, the report
# outputs are empty, and the step fails whatever fail-on-drift says.
#
# Inputs come from the environment (action.yml maps each input to one):
#   TOOLPIN_WORKING_DIRECTORY  directory holding the configuration (".")
#   TOOLPIN_CONFIG             configuration file, relative to it ("toolpin.toml")
#   TOOLPIN_ENV                environment name for --env ("" for none)
#   TOOLPIN_ARGS               extra arguments for `toolpin check`, split on
#                              white space (no quoting)
#   TOOLPIN_SARIF              SARIF report path ("toolpin.sarif")
#   TOOLPIN_MARKDOWN           Markdown report path ("toolpin.md")
#   TOOLPIN_JSON               JSON report path ("" for a temporary file)
#   TOOLPIN_FAIL_ON_DRIFT      "true": exit 1 on drift; "false": exit 0
#   TOOLPIN_SUMMARY            "true": append the Markdown to the step summary
#   TOOLPIN_BIN                the toolpin program ("toolpin", looked up on PATH)
#   PYTHON                     python3 to read the JSON report ("python3")
set -euo pipefail

workdir="${TOOLPIN_WORKING_DIRECTORY:-.}"
config="${TOOLPIN_CONFIG:-toolpin.toml}"
env_name="${TOOLPIN_ENV:-}"
sarif="${TOOLPIN_SARIF:-toolpin.sarif}"
markdown="${TOOLPIN_MARKDOWN:-toolpin.md}"
json="${TOOLPIN_JSON:-}"
fail_on_drift="${TOOLPIN_FAIL_ON_DRIFT:-true}"
summary="${TOOLPIN_SUMMARY:-true}"
bin="${TOOLPIN_BIN:-toolpin}"
python="${PYTHON:-python3}"
output="${GITHUB_OUTPUT:-/dev/null}"
step_summary="${GITHUB_STEP_SUMMARY:-/dev/null}"

rc_written=false
die() {
    # A workflow error annotation plus a plain line for other logs; the step
    # fails with exit code 2, as toolpin does on an error.
    [ "$rc_written" = true ] || echo "exit-code=2" >>"$output"
    local msg="${1//'%'/%25}"
    msg="${msg//$'\r'/%0D}"
    msg="${msg//$'\n'/%0A}"
    echo "::error title=toolpin::$msg"
    echo "toolpin action: $1" >&2
    exit 2
}

bool() {
    case "$2" in
        true | false) ;;
        *) die "input $1 must be true or false, not '$2'" ;;
    esac
}
bool fail-on-drift "$fail_on_drift"
bool summary "$summary"

command -v "$bin" >/dev/null 2>&1 || die "cannot find '$bin' on PATH"
command -v "$python" >/dev/null 2>&1 || die "cannot find '$python' to read the JSON report"

# The configuration path, as toolpin will be given it.
case "$config" in
    /*) config_path="$config" ;;
    *)
        if [ "$workdir" = "." ] || [ -z "$workdir" ]; then
            config_path="$config"
        else
            config_path="${workdir%/}/$config"
        fi
        ;;
esac
[ -f "$config_path" ] || die "no configuration file at $config_path (inputs working-directory and config)"

tmp="$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/toolpin-action.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
if [ -z "$json" ]; then
    # Kept after the step (json-file output): the runner empties RUNNER_TEMP
    # at the end of the job.
    json="$(mktemp "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/toolpin-report.XXXXXX")"
fi

# toolpin writes each report atomically but does not create directories.
for path in "$sarif" "$markdown" "$json"; do
    mkdir -p "$(dirname "$path")"
    rm -f "$path" # a report left from an earlier run must not be mistaken for this one's
done

args=(check --config "$config_path")
[ -z "$env_name" ] || args+=(--env "$env_name")
if [ -n "${TOOLPIN_ARGS:-}" ]; then
    # Every white-space-separated word, across lines; no globbing, no quotes.
    read -r -d '' -a extra <<<"$TOOLPIN_ARGS" || true
    args+=(${extra[@]+"${extra[@]}"})
fi
args+=(--format text --format "sarif=$sarif" --format "markdown=$markdown" --format "json=$json")

echo "toolpin ${args[*]}"
rc=0
"$bin" "${args[@]}" 2>"$tmp/stderr" || rc=$?
cat "$tmp/stderr" >&2

abs() { (cd "$(dirname "$1")" && printf '%s/%s\n' "$PWD" "$(basename "$1")"); }

echo "exit-code=$rc" >>"$output"
rc_written=true

if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
    message="$(tail -n 5 "$tmp/stderr")"
    [ -n "$message" ] || message="toolpin check exited $rc"
    {
        echo "fingerprint="
        echo "pinned-fingerprint="
        echo "finding-count="
        echo "failing-count="
        echo "highest-severity="
        echo "sarif-file="
        echo "markdown-file="
        echo "json-file="
    } >>"$output"
    if [ "$summary" = true ]; then
        {
            echo "### ⚠️ toolpin check could not run (exit $rc)"
            echo
            echo '````text'
            printf '%s\n' "$message"
            echo '````'
        } >>"$step_summary"
    fi
    escaped="${message//'%'/%25}"
    escaped="${escaped//$'\r'/%0D}"
    escaped="${escaped//$'\n'/%0A}"
    echo "::error title=toolpin check failed (exit $rc)::$escaped"
    exit "$rc"
fi

for path in "$sarif" "$markdown" "$json"; do
    [ -s "$path" ] || die "toolpin check exited $rc but wrote no report at $path"
done

# Outputs from the findings document (docs/findings.md).
"$python" - "$json" >>"$output" <<'PY'
import json
import sys

with open(sys.argv[1], encoding="utf-8") as f:
    doc = json.load(f)
summary = doc["summary"]
counts = summary["by_severity"]
order = ["critical", "high", "medium", "low", "info"]
highest = next((s for s in order if counts.get(s, 0) > 0), "none")
if (highest == "none") != (summary["findings"] == 0):
    sys.exit(f"toolpin action: by_severity {counts} disagrees with findings={summary['findings']}")
print(f"fingerprint={doc['fingerprints']['after']}")
print(f"pinned-fingerprint={doc['fingerprints']['before']}")
print(f"finding-count={summary['findings']}")
print(f"failing-count={len(doc['verdict']['failing'])}")
print(f"highest-severity={highest}")
PY
{
    echo "sarif-file=$(abs "$sarif")"
    echo "markdown-file=$(abs "$markdown")"
    echo "json-file=$(abs "$json")"
} >>"$output"

if [ "$summary" = true ]; then
    cat "$markdown" >>"$step_summary"
fi

if [ "$rc" -eq 1 ]; then
    if [ "$fail_on_drift" = true ]; then
        exit 1
    fi
    echo "::warning title=toolpin::tool drift found; fail-on-drift is false, so the step passes"
fi
exit 0
