#!/bin/sh
# make calibrate-validation: for each file of make validate's data
# (scripts/validate.sh's mappings), calibrates the file's cluster on 5 of
# its rows (`ampplan calibrate`), predicts the other rows with the
# calibrated cluster, and prints Markdown tables (README "Calibration") of
# the held-out rows' errors before and after, as scripts/validate_stats.awk
# computes them. The 5 rows: those at positions (k + 1/2) x n / 5,
# k = 0..4, of the n rows with a measured time (spread over the file).
# Two starts:
#   shipped  the cluster file as make validate uses it (its constants were
#            fitted to these files: the baseline is in-sample);
#   stale    the same with its GPU type's efficiency_max set to 0.5 and the
#            node groups' NCCL efficiencies removed (the loader's defaults,
#            0.75 and 0.9): a GPU type entered from its datasheet with a
#            guessed efficiency, as a user adds one the catalogue has not
#            calibrated.
# Files under build/calibrate-validation/FILE/START/: runs.csv (every
# evaluated row), train.rows and train.csv, start.json, calibrate.txt
# (ampplan calibrate's output), calibrated.json, before.txt and after.txt
# (validate.sh's results); under FILE/first/ the first pass's (the
# mapping's cluster, its runs and results).
#
#   scripts/calibrate_validation.sh          both tables on stdout
#   AMPPLAN=build/ampplan scripts/calibrate_validation.sh
#   CALIBRATE_FILES="a.csv" ...              only these files
#   CALIBRATE_STARTS="shipped"               only these starts
set -eu
cd "$(dirname "$0")/.."
bin=${AMPPLAN:-./ampplan}
out=build/calibrate-validation
files=${CALIBRATE_FILES:-megatron2021_table1_weak_scaling.csv korthikanti2022_table5_iteration_time.csv \
dgxc_h100_nemo_24.11.csv hagemann2023_llama13b_runs.csv amp2022_homogeneous_trials.csv}
starts=${CALIBRATE_STARTS:-shipped stale}
[ -x "$bin" ] || { echo "calibrate_validation: no ampplan binary at '$bin'" >&2; exit 1; }
rm -rf "$out"
# validate.sh's own files apart from make check's validation run beside it
export VALIDATE_DIR=$out/validate

# validate FILE CLUSTER RESULTS [RUNS_DIR]: validate.sh on FILE with every
# row on CLUSTER; its results.txt copied to RESULTS.
validate() {
	AMPPLAN=$bin VALIDATE_STRICT=0 VALIDATE_FILES=$1 VALIDATE_CLUSTER=$2 VALIDATE_RUNS=${4-} \
		scripts/validate.sh >/dev/null
	cp "$VALIDATE_DIR/results.txt" "$3"
}

# held_out RESULTS TRAIN: validate_stats.awk's summary of RESULTS without
# the rows of TRAIN (data-row numbers of runs.csv, one a line; runs.csv
# holds the evaluated rows, the results also those not evaluated, fit "N").
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

# experiment FILE START: one table row.
experiment() {
	d=$out/$1/$2 first=$out/$1/first
	mkdir -p "$d"
	# the mapping's cluster, from a first pass (once a file, for both
	# starts) that writes the runs
	if [ ! -d "$first" ]; then
		mkdir -p "$first"
		AMPPLAN=$bin VALIDATE_STRICT=0 VALIDATE_FILES=$1 VALIDATE_RUNS=$first \
			scripts/validate.sh >/dev/null
		cp "$VALIDATE_DIR/results.txt" "$first/results.txt"
	fi
	src=$(cat "$first/$1.cluster")
	cp "$first/$1" "$d/runs.csv"
	if [ "$2" = stale ]; then
		sed -e '/"intra_node_efficiency"/d' -e '/"inter_node_efficiency"/d' \
			-e 's/\("catalogue": *"[^"]*",\)/\1 "efficiency_max": 0.5,/' "$src" >"$d/start.json"
		# start.json lies beside no catalogue: its GPU types find gpus/ here
		validate "$1" "$d/start.json" "$d/before.txt"
	else
		# the mapping's own cluster: the first pass's results
		cp "$src" "$d/start.json"
		cp "$first/results.txt" "$d/before.txt"
	fi
	awk -F , 'NR > 1 && $NF != "inf" { t[++n] = NR - 1 }
		END { for (k = 0; k < 5 && n >= 5; k++) print t[int((k + 0.5) * n / 5) + 1] }' \
		"$d/runs.csv" >"$d/train.rows"
	awk 'NR == FNR { keep[$1 + 1] = 1; next } FNR == 1 || FNR in keep' \
		"$d/train.rows" "$d/runs.csv" >"$d/train.csv"
	if ! "$bin" calibrate --cluster "$d/start.json" --runs "$d/train.csv" \
		--out "$d/calibrated.json" >"$d/calibrate.txt" 2>&1; then
		echo "| $1 | - | calibrate failed: $(tail -n 1 "$d/calibrate.txt") | | | |"
		return
	fi
	validate "$1" "$d/calibrated.json" "$d/after.txt"
	b=$(held_out "$d/before.txt" "$d/train.rows")
	a=$(held_out "$d/after.txt" "$d/train.rows")
	fitted=$(awk '/^  constant /{on = 1; next} on && NF == 0 {on = 0}
		on && $NF == "fitted" { printf "%s%s %s %s -> %s", sep, $1, $2, $3, $4; sep = "; " }' \
		"$d/calibrate.txt")
	echo "| $1 | $(field rows "$b") | $(field mape "$b") -> $(field mape "$a") |" \
		"$(field spearman "$b") -> $(field spearman "$a") |" \
		"$(field false_oom "$b") / $(field missed_oom "$b") -> $(field false_oom "$a") / $(field missed_oom "$a") |" \
		"${fitted:-none (kept)} |"
}

for start in $starts; do
	echo
	echo "From the $start constants:"
	echo
	echo "| file | rows held out | MAPE % before -> after | Spearman before -> after | false / missed OOM before -> after | constants fitted on 5 rows |"
	echo "|---|---|---|---|---|---|"
	for file in $files; do
		experiment "$file" "$start"
	done
done
