#!/bin/sh
# make validate: evaluates the configurations of the published A100 tables in
# tests/data/validation/ (Narayanan et al. 2021 Table 1; Korthikanti et al.
# 2022 Table 5) through ampplan's what-if mode and prints, per row, the
# published iteration time, the predicted one and the error. The GPU and
# links are those of clusters/selene-a100.json, with the node count set to
# the row's GPUs. Exits 1 if a row is off by more than 10% or the mean
# absolute error exceeds 5%, or if ampplan rejects a configuration the paper ran.
#
# Table 1 gives no micro-batch size or schedule: every row runs micro-batch 1,
# 1F1B, full recomputation (its Eq. 3 counts it), no distributed optimizer
# (Megatron-LM 2021 had none).
set -eu
cd "$(dirname "$0")/.."
bin=${AMPPLAN:-./ampplan}
dir=build/validate
data=tests/data/validation
mkdir -p "$dir"

# model NAME HEADS HIDDEN LAYERS SEQ: a GPT profile (f = 4h, MHA, biases,
# learned positions, tied embeddings, vocabulary padded to 51,200).
model() {
	cat >"$dir/$1.json" <<JSON
{"name": "$1", "source": "tests/data/validation", "hidden_size": $3, "num_layers": $4,
 "num_attention_heads": $2, "ffn_hidden_size": $(($3 * 4)), "ffn_kind": "gelu",
 "vocab_size": 51200, "seq_length": $5, "global_batch_size": 1,
 "max_position_embeddings": $5, "tie_word_embeddings": true, "bias": true,
 "position_embedding": "learned", "dtype": "bf16"}
JSON
}

# cluster GPUS: Selene nodes of 8 A100-80GB.
cluster() {
	sed "s/\"nodes\": [0-9]*/\"nodes\": $(($1 / 8))/" clusters/selene-a100.json >"$dir/selene-$1.json"
}

# predict ROWNAME GPUS ARGS...: prints the predicted iteration seconds.
predict() {
	name=$1 gpus=$2
	shift 2
	cluster "$gpus"
	out=$("$bin" --model "$dir/$name.json" --cluster "$dir/selene-$gpus.json" "$@" 2>&1) || {
		echo "validate: ampplan rejected $name on $gpus GPUs ($*): $out" >&2
		exit 1
	}
	echo "$out" | awk '/^  iteration / { print $2; exit }'
}

rows=$dir/rows.txt
: >"$rows"

# Narayanan et al. 2021 Table 1 (iteration time derived from Eq. 3).
tail -n +2 "$data/megatron2021_table1_weak_scaling.csv" | sed 's/"[^"]*"/gpu/' |
while IFS=, read -r params heads hidden layers tp pp gpus dp gbs _tf _pct _agg seq _v _gpu iter _p2; do
	name="gpt-${params}B"
	model "$name" "$heads" "$hidden" "$layers" "$seq"
	p=$(predict "$name" "$gpus" --tp "$tp" --pp "$pp" --dp "$dp" --cp 1 --mbs 1 \
		--gbs "$gbs" --recompute full)
	echo "Narayanan2021-T1 $name-tp$tp-pp$pp-$gpus $iter $p" >>"$rows"
done

# Korthikanti et al. 2022 Table 5.
tail -n +2 "$data/korthikanti2022_table5_iteration_time.csv" |
while IFS=, read -r mname _pb heads hidden _ffn layers seq tp pp dp gpus gbs mbs v mode iter _src; do
	name=$mname
	model "$name" "$heads" "$hidden" "$layers" "$seq"
	case $mode in
	full) rc=full ;;
	*) rc=selective ;;
	esac
	sched=
	[ "$v" -gt 1 ] && sched="--vp $v"
	# shellcheck disable=SC2086
	p=$(predict "$name" "$gpus" --tp "$tp" --pp "$pp" --dp "$dp" --cp 1 --mbs "$mbs" \
		--gbs "$gbs" --recompute "$rc" $sched)
	echo "Korthikanti2022-T5 $name-$mode $iter $p" >>"$rows"
done

awk '
BEGIN { printf "%-20s %-28s %10s %10s %8s\n", "source", "configuration", "published", "predicted", "error" }
{
	err = ($4 - $3) / $3 * 100
	printf "%-20s %-28s %9.2fs %9.2fs %+7.1f%%\n", $1, $2, $3, $4, err
	sum += (err < 0 ? -err : err); n++
	if (err > 10 || err < -10) bad++
}
END {
	printf "mean absolute error %.1f%% over %d rows; %d outside 10%%\n", sum / n, n, bad
	exit (bad > 0 || sum / n > 5)
}' "$rows"
