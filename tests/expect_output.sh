#!/bin/sh
# expect_output.sh EXIT_CODE REGEX COMMAND [ARG...]
#
# A command-line check for CTest (mpcache_add_cli_test): passes when COMMAND exits with
# EXIT_CODE and its output (stdout and stderr together, as one text: "." matches a newline)
# matches the extended regular expression REGEX. CTest's PASS_REGULAR_EXPRESSION alone
# ignores the exit code, so a command that printed the right line and then failed passed.
set -u
if [ "$#" -lt 3 ]; then
  echo "usage: expect_output.sh EXIT_CODE REGEX COMMAND [ARG...]" >&2
  exit 2
fi
code=$1
regex=$2
shift 2
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne "$code" ]; then
  echo "expect_output: $1 exited with $rc, expected $code" >&2
  exit 1
fi
if ! printf '%s' "$out" | grep -Ezq -- "$regex"; then
  echo "expect_output: the output does not match: $regex" >&2
  exit 1
fi
