#!/usr/bin/env bash
# The progress lines state each check's sample plan before it draws and count against it.
# Off a terminal: one line per check, "N samples of P planned", N = P for every check that
# draws its whole plan (a correct subject: no sequential stop); on a terminal (script(1)
# gives one) the redrawn line shows the battery's "samples D / P planned" and the time
# left; off a terminal, a check that draws longer than --progress-every also prints "still
# drawing" lines with its samples so far; --quiet prints nothing. The plans are counted
# beside the checks: the terminal's total shows a '+' until every plan is counted.
#   progress_test.sh SAMPLECHECK WORKDIR
sc=$1
work=$2
source "$(dirname "$0")/test_lib.sh" "$work"
checks=support,goodness_of_fit,replay,offset_advancement,batch_reorder,tail,batch_invariance
run=("$sc" qualify --subject cpu.multinomial --checks "$checks")  # 7 checks x 3 dtypes

"${run[@]}" >"$work/table.txt" 2>"$work/lines.txt" || bad "qualify cpu.multinomial failed"
lines=$(grep -c '^samplecheck: \[[0-9]*/21\] cpu.multinomial ' "$work/lines.txt")
[ "$lines" -eq 21 ] && ok "one line per check (21)" || bad "$lines lines of 21: $(cat "$work/lines.txt")"
sum=0
while read -r name dtype n p; do
  if [ "$n" = "$p" ] && [ "$p" -gt 0 ]; then
    ok "$name [$dtype]: $n samples of $p planned"
    sum=$((sum + p))
  elif [ "$n" -eq 0 ] && grep -q "^$name \[$dtype\] *n/a" "$work/table.txt"; then
    ok "$name [$dtype]: n/a, none of its $p planned samples drawn"
  else
    bad "$name [$dtype]: $n samples of $p planned"
  fi
done < <(sed -n 's/^samplecheck: \[[0-9]*\/21\] cpu.multinomial \([a-z_]*\)\[\([a-z0-9]*\)\]: [0-9.]* s, \([0-9]*\) samples of \([0-9]*\) planned;.*/\1 \2 \3 \4/p' "$work/lines.txt")
# The table's total is what the plans said (every check that ran drew its whole plan).
total=$(sed -n 's/^PASS: \([0-9]*\) samples in .*/\1/p' "$work/table.txt")
[ -n "$total" ] && [ "$total" -eq "$sum" ] && ok "the table's $total samples = the plans' sum" ||
  bad "table total '$total' vs the plans' sum $sum"

if command -v script >/dev/null; then
  SC_CMD="${run[*]}" script -qec 'eval "$SC_CMD" >/dev/null' /dev/null >"$work/tty.txt" 2>&1
  tr '\r' '\n' <"$work/tty.txt" | sed 's/\x1b\[K//g' >"$work/tty_lines.txt"
  planned=$(sed -n 's/.* samples [0-9,]* \/ \([0-9,]*\) planned.*/\1/p' "$work/tty_lines.txt" |
    sort -u | tr -d ,)
  want=$(sed -n 's/.* samples of \([0-9]*\) planned;.*/\1/p' "$work/lines.txt" | awk '{ s += $1 } END { print s }')
  [ "$planned" = "$want" ] && ok "terminal: samples done / $planned planned, one plan all run" ||
    bad "terminal: planned '$planned', want $want: $(head -c 600 "$work/tty_lines.txt")"
  # The plans are counted beside the checks: until all are, the line shows the counted part
  # with a '+', never more than the whole.
  for part in $(sed -n 's/.* samples [0-9,]* \/ \([0-9,]*\)+ planned.*/\1/p' "$work/tty_lines.txt" |
    sort -u | tr -d ,); do
    [ "$part" -le "$want" ] && ok "terminal: $part+ planned while counting" ||
      bad "terminal: $part+ planned exceeds the whole plan $want"
  done
  grep -q 'samples [0-9,]* / [0-9,]* planned, elapsed [0-9:]*, about [0-9:]* left' \
    "$work/tty_lines.txt" && ok "terminal: the time left is shown" || bad "terminal: no time left"
else
  echo "script(1) not found: the terminal line is not checked"
fi

# tail at the standard budget draws about 8M samples a dtype, over a second here.
"$sc" qualify --subject cpu.multinomial --budget standard --checks tail --progress-every 0.1 \
  >/dev/null 2>"$work/every.txt" || bad "qualify --progress-every failed"
drawing='^samplecheck: still drawing \[[0-9]/3\] cpu.multinomial tail\[[a-z0-9]*\]: [0-9:]*, [0-9]* samples of [0-9]* planned'
n=$(grep -c "$drawing" "$work/every.txt")
[ "$n" -ge 1 ] && ok "--progress-every: $n 'still drawing' lines" || bad "no 'still drawing' line: $(head -c 600 "$work/every.txt")"
sed -n 's/^samplecheck: still drawing .*: [0-9:]*, \([0-9]*\) samples of \([0-9]*\) planned.*/\1 \2/p' \
  "$work/every.txt" | while read -r d p; do
  [ "$d" -le "$p" ] || bad "still drawing: $d samples of $p planned"
done
ended=$(grep -c '^samplecheck: \[[0-9]/3\] cpu.multinomial tail' "$work/every.txt")
[ "$ended" -eq 3 ] && ok "--progress-every: still one line as each check ends" || bad "$ended end lines of 3"

"${run[@]}" --quiet >/dev/null 2>"$work/quiet.txt"
[ ! -s "$work/quiet.txt" ] && ok "--quiet: nothing on stderr" || bad "--quiet printed: $(head -n 2 "$work/quiet.txt")"
finish
