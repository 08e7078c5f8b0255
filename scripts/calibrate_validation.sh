#!/bin/sh
# make calibrate-validation: for each file of make validate's data
# (scripts/validate.sh's mappings), calibrates its cluster file on 5 of its
# rows (`ampplan calibrate`) and predicts the others with the calibrated
# file, and prints a Markdown table (README "Calibration") of the held-out
# rows' errors before and after, as scripts/validate_stats.awk computes
# them. The 5 rows: those at positions (k + 1/2) x n / 5, k = 0..4, of the
# n rows with a measured time (evenly spread over the file's order).
# Files under build/calibrate-validation/FILE/: runs.csv (every evaluated
# row), train.csv, calibrate.txt (ampplan calibrate's output),
# calibrated.json, before.txt and after.txt (validate.sh's results).
#
#   scripts/calibrate_validation.sh          the table on stdout
#   AMPPLAN=build/ampplan scripts/calibrate_validation.sh
#   CALIBRATE_FILES="a.csv" ...              only these files
set -eu
cd "$(dirname "$0")/.."
bin=${AMPPLAN:-./ampplan}
out=build/calibrate-validation
files=${CALIBRATE_FILES:-megatron2021_table1_weak_scaling.csv korthikanti2022_table5_iteration_time.csv \
dgxc_h100_nemo_24.11.csv hagemann2023_llama13b_runs.csv amp2022_homogeneous_trials.csv}
[ -x "$bin" ] || { echo "calibrate_validation: no ampplan binary at '$bin'" >&2; exit 1; }
rm -rf "$out"

# held_out RESULTS TRAIN: validate_stats.awk's summary line of RESULTS
# (validate.sh's results.txt) without the rows of TRAIN (the data-row
# numbers of runs.csv, one a line; runs.csv holds the evaluated rows, the
# results also those not evaluated, fit "N").
held_out() {
	awk -F '\t' -v train="$2" '
		BEGIN { while ((getline l < train) > 0) drop[l] = 1 }
		$7 != "N" { k++; if (k in drop) next }
		{ print }' "$1" >"$1.held"
	awk -v strict=0 -f scripts/validate_stats.awk "$1.held" | sed -n 's/^summary [^ ]* //p'
}

# field KEY LINE: the value of KEY=VALUE in a summary line.
field() {
	echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"
}

echo "| file | rows held out | MAPE % before -> after | Spearman before -> after | false / missed OOM before -> after | constants fitted on 5 rows |"
echo "|---|---|---|---|---|---|"
for file in $files; do
	d=$out/$file
	mkdir -p "$d/runs"
	AMPPLAN=$bin VALIDATE_STRICT=0 VALIDATE_FILES=$file VALIDATE_RUNS=$d/runs \
		scripts/validate.sh >/dev/null
	cp build/validate/results.txt "$d/before.txt"
	cp "$d/runs/$file" "$d/runs.csv"
	cluster=$(cat "$d/runs/$file.cluster")
	# the 5 rows with a time, evenly spread
	awk -F , 'NR > 1 && $NF != "inf" { t[++n] = NR - 1 }
		END { for (k = 0; k < 5 && n >= 5; k++) print t[int((k + 0.5) * n / 5) + 1] }' \
		"$d/runs.csv" >"$d/train.rows"
	awk 'NR == FNR { keep[$1 + 1] = 1; next } FNR == 1 || FNR in keep' \
		"$d/train.rows" "$d/runs.csv" >"$d/train.csv"
	if ! "$bin" calibrate --cluster "$cluster" --runs "$d/train.csv" \
		--out "$d/calibrated.json" >"$d/calibrate.txt" 2>&1; then
		echo "| $file | - | calibrate failed: $(tail -n 1 "$d/calibrate.txt") | | | |"
		continue
	fi
	AMPPLAN=$bin VALIDATE_STRICT=0 VALIDATE_FILES=$file VALIDATE_CLUSTER=$d/calibrated.json \
		scripts/validate.sh >/dev/null
	cp build/validate/results.txt "$d/after.txt"
	b=$(held_out "$d/before.txt" "$d/train.rows")
	a=$(held_out "$d/after.txt" "$d/train.rows")
	fitted=$(awk '/^  constant /{on = 1; next} on && NF == 0 {on = 0}
		on && $NF == "fitted" { printf "%s%s %s %s->%s", sep, $1, $2, $3, $4; sep = "; " }' \
		"$d/calibrate.txt")
	echo "| $file | $(field rows "$b") | $(field mape "$b") -> $(field mape "$a") |" \
		"$(field spearman "$b") -> $(field spearman "$a") |" \
		"$(field false_oom "$b") / $(field missed_oom "$b") -> $(field false_oom "$a") / $(field missed_oom "$a") |" \
		"${fitted:-none (catalogue kept)} |"
done
