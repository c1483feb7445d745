#!/usr/bin/env bash
# Prints a digest of the tests that failed in the last ctest run of a build dir: for each, its
# assertion failures (the gtest "Failure" lines and what follows them) and the end of its output.
# scripts/test.sh calls it after a failed ctest, so that the digest is the last thing the run
# prints (CI keeps only the end of the output; ctest's own --output-on-failure text is
# earlier, among a thousand other lines).
#   scripts/ctest_failures.sh BUILD_DIR [TAIL_LINES]
set -euo pipefail
log="${1:?usage: ctest_failures.sh BUILD_DIR [TAIL_LINES]}/Testing/Temporary/LastTest.log"
tail_lines="${2:-40}"
[ -f "$log" ] || { echo "ctest_failures.sh: no $log"; exit 0; }
awk -v tail_lines="$tail_lines" '
  function flush(   i, j, from, shown) {
    printf "==== failed: %s\n", name
    shown = 0
    for (i = 0; i < n && shown < 4; i++) {  # its first assertion failures, with what explains them
      if (out[i] ~ /(: Failure|\*\*\* |Timeout|Segmentation|AddressSanitizer|runtime error:)/) {
        for (j = i; j < n && j < i + 6; j++) printf "  | %s\n", substr(out[j], 1, 400)
        shown++
      }
    }
    from = n > tail_lines ? n - tail_lines : 0
    printf "  ---- last %d lines of its output:\n", n - from
    for (i = from; i < n; i++) printf "  | %s\n", substr(out[i], 1, 400)
  }
  /^[0-9]+\/[0-9]+ Test: / { name = $0; sub(/^[0-9]+\/[0-9]+ Test: /, "", name); n = 0; inout = 0; next }
  /^Output:$/ { getline; inout = 1; next }
  /^<end of output>$/ { inout = 0; next }
  inout { out[n++] = $0; next }
  /^Test Failed/ { flush(); failed++ }
  END { if (failed) printf "==== %d failed test(s) above (full output: %s)\n", failed, FILENAME }
' "$log"
