#!/usr/bin/env bash
# expect_exit.sh CODE WORD COMMAND...: COMMAND must exit CODE with WORD in its output.
# CODE "device" means 77 (device absent) where no NVIDIA GPU answers, and skips (77)
# where one does: there the subject would really run.
set -u
want=$1 word=$2
shift 2
if [ "$want" = device ]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    echo "a GPU is present: the device-absent case cannot be shown here"
    exit 77
  fi
  want=77
fi
out=$("$@" 2>&1)
rc=$?
echo "$out" | tail -n 5
if [ "$rc" -ne "$want" ]; then echo "exit $rc, want $want"; exit 1; fi
if ! grep -qF -- "$word" <<<"$out"; then echo "output does not contain \"$word\""; exit 1; fi
echo "exit $rc as expected"
