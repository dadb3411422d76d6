# SPDX-License-Identifier: MIT
# Copyright 2026 The causal Authors
#
# Helpers shared by .ci/test and .ci/run (sourced, not executed).
#
# Test counts live in a file named by $CAUSAL_CI_COUNTS, one
# "passed failed skipped" line per step, so that .ci/run can call .ci/test
# and still print one summary for everything. The first script to call
# ci_counts_init owns the file and prints the summary; a script started by
# it (with the variable exported) only appends.

# ci_log MESSAGE: a step header with the wall time since CI started, so a
# slow step shows in the log.
ci_log() {
  : "${CAUSAL_CI_START:=$(date +%s)}"
  export CAUSAL_CI_START
  printf '\n==> [+%ds] %s\n' "$(($(date +%s) - CAUSAL_CI_START))" "$*"
}

ci_counts_init() {
  if [[ -n "${CAUSAL_CI_COUNTS:-}" && -f "${CAUSAL_CI_COUNTS}" ]]; then
    ci_counts_owner=0
  else
    CAUSAL_CI_COUNTS="$(mktemp "${TMPDIR:-/tmp}/causal-ci-counts.XXXXXX")"
    export CAUSAL_CI_COUNTS
    ci_counts_owner=1
  fi
}

# ci_add PASSED FAILED SKIPPED
ci_add() {
  printf '%d %d %d\n' "$1" "$2" "$3" >>"${CAUSAL_CI_COUNTS}"
}

# ci_fail_step DESCRIPTION: a step that is not a test (setup, build) failed;
# it counts as one failed test so the summary cannot read clean.
ci_fail_step() {
  printf 'FAILED: %s\n' "$1" >&2
  ci_add 0 1 0
}

# ci_setup BUILDDIR [MESON_OPTIONS...]: configure, or reconfigure if it exists.
# Returns non-zero (after counting a failure) if it does not work.
ci_setup() {
  local dir="$1"
  shift
  local mode=()
  if [[ -d "${dir}/meson-private" ]]; then
    mode=(--reconfigure)
  fi
  local log
  log="$(mktemp "${TMPDIR:-/tmp}/causal-ci-setup.XXXXXX")"
  if ! meson setup "${mode[@]}" "${dir}" --wrap-mode=nodownload "$@" >"${log}" 2>&1; then
    cat "${log}" >&2
    rm -f "${log}"
    ci_fail_step "meson setup ${dir} $*"
    return 1
  fi
  rm -f "${log}"
}

# ci_compile BUILDDIR: build everything; a failure counts as one failed test.
ci_compile() {
  if ! meson compile -C "$1"; then
    ci_fail_step "meson compile -C $1"
    return 1
  fi
}

# ci_compile_suites BUILDDIR SUITE...: build only what the tests of those
# suites need (.ci/suite_targets.py); a failure counts as one failed test.
ci_compile_suites() {
  local dir="$1"
  shift
  local targets
  if ! targets="$(python3 .ci/suite_targets.py "${dir}" "$@")" || [[ -z "${targets}" ]]; then
    ci_fail_step "listing the targets of suites $* in ${dir}"
    return 1
  fi
  # shellcheck disable=SC2086  # one output path per word
  if ! ninja -C "${dir}" ${targets}; then
    ci_fail_step "ninja -C ${dir} (suites $*)"
    return 1
  fi
}

# ci_meson_test BUILDDIR LABEL [MESON_TEST_ARGS...]: runs meson test and adds
# its results from the JSON test log. Meson's OK and EXPECTEDFAIL count as
# passed; SKIP as skipped; FAIL, UNEXPECTEDPASS, TIMEOUT, ERROR and anything
# else as failed. If meson test fails without recording a failed test (e.g.
# a rebuild error), that counts as one failure.
ci_meson_test() {
  local dir="$1" label="$2"
  shift 2
  local logbase="ci-${label}"
  local json="${dir}/meson-logs/${logbase}.json"
  rm -f "${json}"
  local rc=0
  meson test -C "${dir}" --logbase "${logbase}" --print-errorlogs "$@" || rc=$?
  local counts="0 0 0"
  if [[ -f "${json}" ]]; then
    counts="$(python3 - "${json}" <<'PY'
import json, sys
passed = failed = skipped = 0
with open(sys.argv[1], encoding="utf-8") as log:
    for line in log:
        if not line.strip():
            continue
        result = json.loads(line)["result"]
        if result in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif result == "SKIP":
            skipped += 1
        else:
            failed += 1
print(passed, failed, skipped)
PY
)" || counts="0 1 0"
  fi
  local passed failed skipped
  read -r passed failed skipped <<<"${counts}"
  if [[ ${rc} -ne 0 && ${failed} -eq 0 ]]; then
    printf 'FAILED: meson test -C %s %s exited %d\n' "${dir}" "$*" "${rc}" >&2
    failed=1
  fi
  printf -- '--> %s: %d passed, %d failed, %d skipped\n' "${label}" "${passed}" "${failed}" "${skipped}"
  ci_add "${passed}" "${failed}" "${skipped}"
}

# ci_summary: prints "N passed, N failed, N skipped" (as the last line) if
# this script owns the counts; returns non-zero if anything failed.
ci_summary() {
  local passed=0 failed=0 skipped=0 p f s
  while read -r p f s; do
    passed=$((passed + p))
    failed=$((failed + f))
    skipped=$((skipped + s))
  done <"${CAUSAL_CI_COUNTS}"
  if [[ ${ci_counts_owner} -eq 1 ]]; then
    rm -f "${CAUSAL_CI_COUNTS}"
    printf '%d passed, %d failed, %d skipped\n' "${passed}" "${failed}" "${skipped}"
  fi
  [[ ${failed} -eq 0 ]]
}
