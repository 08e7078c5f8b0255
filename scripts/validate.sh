#!/bin/sh
# make validate: evaluates every row of every file in tests/data/validation/
# (copies of shared/reference/validation/) through ampplan's what-if mode and
# prints, per file, the line
#   summary FILE rows=N mape=X max=Y spearman=Z false_oom=K missed_oom=J pairs=P/Q pairs15=R/S
# then the file's per-row table (scripts/validate_stats.awk computes them).
# Targets, per file (issue 24): mape <= 4 (%), spearman >= 0.95, false_oom = 0,
# missed_oom = 0, no configuration rejected by ampplan, P >= 0.97 Q and R = S
# (the layout pairs ordered as measured).
#
#   scripts/validate.sh                      exit 1 if a target is missed
#   scripts/validate.sh --regression         exit 1 if a file does worse than
#                                            tests/data/validation/limits.txt
#                                            (make check: the cost model may
#                                            not get worse than it is)
#   VALIDATE_STRICT=0 scripts/validate.sh    the same report, exit 0
#   scripts/validate.sh --self-test          only the statistics self-test
#   AMPPLAN=build/ampplan scripts/validate.sh   another binary (default ./ampplan)
#   VALIDATE_FILES="a.csv b.csv"             only these files of the data
#   VALIDATE_CLUSTER=FILE                    every row on FILE (its nodes set
#                                            per row) in place of the mapping's
#   VALIDATE_RUNS=DIR                        also writes each file's evaluated
#                                            rows as DIR/FILE (ampplan
#                                            calibrate's RUNS.csv) and its
#                                            cluster file's path as
#                                            DIR/FILE.cluster
#                                            (scripts/calibrate_validation.sh)
#   VALIDATE_DIR=DIR                         its files in DIR (default
#                                            build/validate), so that two runs
#                                            can go side by side
#
# Each row's exact command is in build/validate/commands.txt (run from the
# repository root; the model and cluster files it names are in build/validate/).
# The statistics are checked on a hand-made case (self_test below) before every run.
set -eu
cd "$(dirname "$0")/.."
bin=${AMPPLAN:-./ampplan}
strict=${VALIDATE_STRICT:-1}
dir=${VALIDATE_DIR:-build/validate}
data=tests/data/validation

# ==========================================================================
# The mappings: one function per file, row -> ampplan options. Edit here.
#
# row SOURCE CONFIGURATION GROUP MEASURED_S OTHER_S MODEL CLUSTER GPUS OPTIONS...
#   evaluates one row: GROUP names its layout group, the rows of one model,
#   precision, GPU count, sequence and global batch (and software release)
#   that differ only in layout (degrees, micro-batch, kernels,
#   recomputation), whose pairs the statistics check for order (two rows
#   with the same model and options are one layout: no pair);
#   MODEL a profile written by profiles() below, CLUSTER a
#   key of cluster_src() with its node count set to GPUS / gpus_per_node,
#   MEASURED_S "inf" for a failed run, OTHER_S another predictor's seconds
#   (AMP's) or "-". --show-infeasible is added so that a strategy that does
#   not fit still prints its time.
# ==========================================================================

# Narayanan et al. 2021 Table 1 (iteration time derived from its Eq. 3) on
# Selene. The table gives no micro-batch size or schedule: micro-batch 1,
# 1F1B, full recomputation (Eq. 3 counts it), no distributed optimizer
# (Megatron-LM 2021 had none), Megatron's fused softmax (no flash attention
# then), apex's fused LayerNorm, no sequence parallelism (2022), no
# communication overlap, no FP8, fp32 gradient reduction (Megatron's bf16),
# pipeline sends split over TP (the paper's scatter/gather optimization,
# Sec. 4.1, Megatron-LM's default until Megatron-Core: --p2p-split on).
map_megatron2021_table1_weak_scaling() {
	csv_rows "$1" | sed 's/"[^"]*"/gpu/' |
	while IFS=, read -r params heads hidden layers tp pp gpus dp gbs _tf _pct _agg seq _v _gpu iter _p2; do
		name=gpt-${params}B
		gpt_profile "$name" "$heads" "$hidden" "$layers" "$seq"
		row Narayanan2021-T1 "$name-tp$tp-pp$pp-$gpus" "$name $gpus $seq $gbs" "$iter" - "$name" selene "$gpus" \
			--tp "$tp" --pp "$pp" --dp "$dp" --cp 1 --mbs 1 --gbs "$gbs" --seq "$seq" \
			--schedule 1f1b --recompute full --zero 0 \
			--attention fused-softmax --norm fused --sequence-parallel off --fp8 off \
			--tp-comm-overlap off --overlap-grad-reduce off --overlap-param-gather off \
			--grad-dtype fp32 --p2p-split on
	done
}

# Korthikanti et al. 2022 Table 5 on Selene: its micro-batch and interleaving
# (v > 1: interleaved schedule); "full" is the paper's baseline (full
# recomputation, no sequence parallelism), "seq+selective" its method
# (sequence parallelism + selective recomputation). Otherwise as Table 1
# (the same Megatron-LM's scatter/gather of the sends: --p2p-split on, which
# SP's sends, already split, do not change).
map_korthikanti2022_table5_iteration_time() {
	csv_rows "$1" |
	while IFS=, read -r mname _pb heads hidden _ffn layers seq tp pp dp gpus gbs mbs v mode iter _src; do
		gpt_profile "$mname" "$heads" "$hidden" "$layers" "$seq"
		case $mode in
		full) rc=full sp=off ;;
		seq+selective) rc=selective sp=on ;;
		*) die "$1: recompute_mode '$mode' has no mapping" ;;
		esac
		sched="--schedule 1f1b"
		[ "$v" -gt 1 ] && sched="--schedule interleaved --vp $v"
		# shellcheck disable=SC2086
		row Korthikanti2022-T5 "$mname-$mode" "$mname $gpus $seq $gbs" "$iter" - "$mname" selene "$gpus" \
			--tp "$tp" --pp "$pp" --dp "$dp" --cp 1 --mbs "$mbs" --gbs "$gbs" --seq "$seq" \
			$sched --recompute "$rc" --zero 0 \
			--attention fused-softmax --norm fused --sequence-parallel "$sp" --fp8 off \
			--tp-comm-overlap off --overlap-grad-reduce off --overlap-param-gather off \
			--grad-dtype fp32 --p2p-split on
	done
}

# NVIDIA DGX Cloud benchmarking recipes 24.11.1 (NeMo / Megatron-Core) on
# DGX H100 nodes. Every row: its degrees and batches (empty cp = 1; vp given:
# interleaved with vp virtual stages, else 1F1B), flash attention (cuDNN /
# TE fused attention, or FlashAttention-2 where NVTE_FUSED_ATTN=0), TE's
# fused norm, FP8 for the FP8 rows, DP gradient reduce-scatter and
# parameter all-gather overlapped; and the settings its row of
# dgxc_h100_nemo_24.11_recipes.csv states (recipe below): recomputation,
# sequence parallelism, TP communication overlap, gradient accumulation
# fusion, gradients reduced in grad_sync_dtype, FP8 parameters. The
# optimizer, Apex's distributed_fused_adam, shards the optimizer states
# over DP (ZeRO-1; its gradients stay whole in one persistent bf16 buffer,
# contiguous_grad_buffer=true, so they are not sharded as ZeRO-2 would).
map_dgxc_h100_nemo_24_11() {
	csv_rows "$1" |
	while IFS=, read -r rel model _fw prec gpus seq layers gbs mbs tp pp cp vp dp _ga step _tps _mfu _file _commit _note; do
		case $model in
		Llama-3.1-8B) prof=llama3.1-8b ;;
		GPT-3-175B) prof=gpt3-175b ;;
		Nemotron-4-15B) prof=nemotron4-15b ;;
		*) die "$1: model '$model' has no profile" ;;
		esac
		case $prec in
		BF16) fp8=off ;;
		FP8) fp8=on ;;
		*) die "$1: precision '$prec' has no mapping" ;;
		esac
		key="$rel,$model,$prec,$gpus,$layers,$tp,$pp,$cp,$vp"
		[ -n "$cp" ] || cp=1
		if [ -n "$vp" ]; then
			sched="--schedule interleaved --vp $vp" vl=" vp$vp"
		else
			sched="--schedule 1f1b" vl=
		fi
		recipe "$1" "$key"
		# shellcheck disable=SC2086
		row DGXC-NeMo-24.11 "$model $prec ${gpus}g tp$tp pp$pp cp$cp$vl dp$dp mbs$mbs gbs$gbs" \
			"$model $prec $gpus $seq $gbs" "$step" - "$prof" dgx-h100 "$gpus" \
			--tp "$tp" --pp "$pp" --dp "$dp" --cp "$cp" --mbs "$mbs" --gbs "$gbs" --seq "$seq" \
			$sched --recompute "$r_rc" --zero 1 \
			--attention flash --norm fused --sequence-parallel "$r_sp" --fp8 "$fp8" \
			--tp-comm-overlap "$r_tpo" --overlap-grad-reduce on --overlap-param-gather on \
			--grad-dtype "$r_grad" --grad-acc-fusion "$r_gaf"
	done
}

# recipe FILE KEY: sets r_rc, r_sp, r_tpo, r_grad, r_gaf from the row of
# FILE's recipes file (FILE with _recipes before .csv) whose release, model,
# precision, gpus, layers, tp, pp, cp, vp are KEY (comma-separated, as the
# two files write them): recomputation (its recompute cell starts with
# none, selective or full), sequence parallelism (sequence_parallel true),
# TP overlap (ub_tp_comm_overlap=true), gradients (grad_sync_dtype=bf16:
# bf16, else fp32), gradient accumulation fusion (=true). Fails on a row
# without a recipe, or a cell with no mapping.
recipe() {
	rfile=${1%.csv}_recipes.csv
	[ -f "$rfile" ] || die "missing $rfile"
	set -- "$rfile" "$2" "$(awk -v key="$2" -f scripts/validate_csv.awk "$rfile")"
	[ -n "$3" ] || die "$1: no recipe for $2"
	r_rc=$(recipe_cell "$3" recompute) r_sp=$(recipe_cell "$3" sequence_parallel)
	r_tpo=$(recipe_cell "$3" tp_comm_overlap) r_grad=$(recipe_cell "$3" grad_dtype)
	r_gaf=$(recipe_cell "$3" grad_acc_fusion)
	case $r_rc in
	none*) r_rc=none ;;
	selective*) r_rc=selective ;;
	full*) r_rc=full ;;
	*) die "$1: $2: recompute '$r_rc' has no mapping" ;;
	esac
	case $r_sp in
	[Tt]rue*) r_sp=on ;;
	[Ff]alse*) r_sp=off ;;
	*) die "$1: $2: sequence_parallel '$r_sp' has no mapping" ;;
	esac
	case $r_tpo in
	*ub_tp_comm_overlap=[Tt]rue*) r_tpo=on ;;
	*ub_tp_comm_overlap=[Ff]alse*) r_tpo=off ;;
	*) die "$1: $2: tp_comm_overlap '$r_tpo' has no mapping" ;;
	esac
	case $r_grad in
	*grad_sync_dtype=bf16*) r_grad=bf16 ;;
	*grad_sync_dtype=fp32* | "") r_grad=fp32 ;;
	*) die "$1: $2: grad_dtype '$r_grad' has no mapping" ;;
	esac
	case $r_gaf in
	*=[Tt]rue* | "") r_gaf=on ;;
	*=[Ff]alse*) r_gaf=off ;;
	*) die "$1: $2: grad_acc_fusion '$r_gaf' has no mapping" ;;
	esac
}

# recipe_cell ROW NAME: the cell NAME of ROW (validate_csv.awk's NAME=VALUE lines).
recipe_cell() {
	printf '%s\n' "$1" | sed -n "s/^$2=//p"
}

# The same benchmark's Grok-1 314B rows (releases 24.11.1 and 25.02): an
# 8-expert top-2 MoE, proxy models of `layers` of its 64 blocks below 512
# GPUs (a profile per layer count). Megatron's DP = GPUs / (TP PP CP) (the
# published dp column divides by EP too); ETP empty = TP; vp given:
# interleaved. The file's settings: no recomputation, the all-to-all token
# dispatcher, capacity factor 1.0 with inputs padded to capacity, SP and
# TP communication overlap on; otherwise as the 24.11 dense rows.
map_dgxc_h100_grok1() {
	csv_rows "$1" |
	while IFS=, read -r rel _model _fw prec gpus seq layers _full gbs mbs tp pp cp ep etp vp _dp _ga step _rest; do
		case $prec in
		BF16) fp8=off ;;
		FP8) fp8=on ;;
		*) die "$1: precision '$prec' has no mapping" ;;
		esac
		[ -n "$etp" ] || etp=$tp
		if [ -n "$vp" ]; then
			sched="--schedule interleaved --vp $vp" vl=" vp$vp"
		else
			sched="--schedule 1f1b" vl=
		fi
		dp=$((gpus / (tp * pp * cp)))
		grok_profile "$layers"
		# shellcheck disable=SC2086
		row DGXC-Grok-1 "$rel $prec ${gpus}g L$layers tp$tp pp$pp cp$cp ep$ep etp$etp$vl dp$dp" \
			"$rel $prec $gpus $seq $gbs L$layers" "$step" - "grok1-L$layers" dgx-h100 "$gpus" \
			--tp "$tp" --pp "$pp" --dp "$dp" --cp "$cp" --ep "$ep" --etp "$etp" \
			--mbs "$mbs" --gbs "$gbs" --seq "$seq" \
			$sched --recompute none --zero 1 --moe-capacity 1 --moe-pad-capacity on \
			--attention flash --norm fused --sequence-parallel on --fp8 "$fp8" \
			--tp-comm-overlap on --overlap-grad-reduce on --overlap-param-gather on \
			--grad-dtype fp32
	done
}

# Hagemann et al. 2023, LLaMA-13B on A100-SXM4-80GB nodes with 4 x HDR
# (tests/data/validation/a100-80gb-4xhdr.json). Global batch
# gbs_seqs_derived; ckpt: disabled = no recomputation, every_layer = full;
# kernel -> attention and norm kernels (below); sp 1 = sequence parallelism,
# 0 or empty = none, and none with TP 1 (Megatron-LM turns it off there);
# ZeRO-1 with bf16 gradient reduction, 1F1B, gradient reduction overlapped,
# no parameter-gather or TP overlap; their code (not Megatron) accumulates
# each micro-batch's gradients in a pass of its own.
map_hagemann2023_llama13b_runs() {
	csv_rows "$1" |
	while IFS=, read -r _model seq gpus tp pp mbs dp ckpt kernel sp step _tfm _tfa _mfu trial _file _gbt gbs _m; do
		case $ckpt in
		disabled) rc=none ;;
		every_layer) rc=full ;;
		*) die "$1: ckpt '$ckpt' has no mapping" ;;
		esac
		case $kernel in
		"flash_attention2 + RMS kernel") att=flash norm=fused kl=fa2+rms ;;
		flash_attention2) att=flash norm=unfused kl=fa2 ;;
		flash_attentionv1.0.8) att=flash1 norm=unfused kl=fa1 ;;
		fused) att=fused-softmax norm=unfused kl=fused ;;
		torch) att=unfused norm=unfused kl=torch ;;
		*) die "$1: kernel '$kernel' has no mapping" ;;
		esac
		case $sp in
		1) spo=on ;;
		0 | "") spo=off ;;
		*) die "$1: sp '$sp' has no mapping" ;;
		esac
		[ "$tp" -gt 1 ] || spo=off
		row Hagemann2023 "s$seq ${gpus}g tp$tp pp$pp dp$dp mbs$mbs ckpt=$rc $kl sp=${sp:--} #$trial" \
			"$gpus $seq $gbs" "$step" - llama-13b a100-4xhdr "$gpus" \
			--tp "$tp" --pp "$pp" --dp "$dp" --cp 1 --mbs "$mbs" --gbs "$gbs" --seq "$seq" \
			--schedule 1f1b --recompute "$rc" --zero 1 \
			--attention "$att" --norm "$norm" --sequence-parallel "$spo" --fp8 off \
			--tp-comm-overlap off --overlap-grad-reduce on --overlap-param-gather off \
			--grad-dtype bf16 --grad-acc-fusion off
	done
}

# AMP (Li et al. 2022), homogeneous trials: GPT-2 medium on 4 g4dn.12xlarge
# (clusters/aws-g4dn.json), global batch 32, AMP's layer partition as
# --layout (amp_layout below), unfused attention, apex's fused LayerNorm, no
# recomputation, no ZeRO, fp16 gradients accumulated by DeepSpeed (not
# fused), 1F1B, no SP, no overlap, no FP8; DeepSpeed's pipeline engine
# (--trainer deepspeed: its sends split over TP, pipe_partitioned).
# measured_s = inf: the trial failed. A partition with a stage holding no
# block and neither the embedding nor the head is not run: it is reported.
map_amp2022_homogeneous_trials() {
	csv_rows "$1" |
	while IFS=, read -r _exp mbs tp dp pp bounds amp meas; do
		gpus=$((tp * dp * pp))
		lay=$(amp_layout "$bounds") || die "$1: bad amp_partition_bounds '$bounds'"
		case $lay in
		EMPTY*)
			skip_row AMP2022 "mbs$mbs tp$tp dp$dp pp$pp $bounds" "$meas" "$amp" \
				"AMP's partition leaves stage(s) ${lay#EMPTY } without a block, the embedding or the head"
			continue ;;
		esac
		row AMP2022 "mbs$mbs tp$tp dp$dp pp$pp $lay" "$gpus 1024 32" "$meas" "$amp" gpt2-medium g4dn "$gpus" \
			--tp "$tp" --pp "$pp" --dp "$dp" --cp 1 --mbs "$mbs" --gbs 32 --seq 1024 \
			--schedule 1f1b --recompute none --zero 0 --layout "$lay" \
			--attention unfused --norm fused --sequence-parallel off --fp8 off \
			--tp-comm-overlap off --overlap-grad-reduce off --overlap-param-gather off \
			--grad-dtype fp16 --grad-acc-fusion off --trainer deepspeed
	done
}

# amp_layout "[b0 b1 ... bn]": AMP's stage bounds over GPT-2's 30 layer specs
# (0-2 embedding and two shape/dtype lambdas, 3-26 the 24 blocks, 27-29
# transpose, final norm, LM head; stage k = specs [b_k, b_k+1)) as Megatron's
# layout: E if the stage holds spec 0, its count of block specs, L if it
# holds spec 29; e.g. [0 5 8 11 14 17 20 23 30] -> E+2|3|3|3|3|3|3|4+L.
# Prints "EMPTY k,..." (stages from 0) when a stage would be empty; fails on
# bounds that do not run from 0 to 30 upwards.
amp_layout() {
	echo "$1" | awk '{
		gsub(/[][]/, ""); n = split($0, b, " ")
		if (n < 2 || b[1] != 0 || b[n] != 30) exit 1
		out = ""; empty = ""
		for (k = 1; k < n; k++) {
			lo = b[k] + 0; hi = b[k + 1] + 0
			if (hi <= lo) exit 1
			s = (lo == 0) ? "E" : ""
			nb = ((hi - 1 < 26) ? hi - 1 : 26) - ((lo > 3) ? lo : 3) + 1
			if (nb > 0) s = s (s == "" ? "" : "+") nb
			if (lo <= 29 && 29 < hi) s = s (s == "" ? "" : "+") "L"
			if (s == "") empty = empty (empty == "" ? "" : ",") (k - 1)
			out = out (k > 1 ? "|" : "") s
		}
		print (empty == "" ? out : "EMPTY " empty)
	}'
}

# The model profiles (README "Model profiles"; layers derived by the loader).
profiles() {
	# LLaMA-13B (Hagemann et al. 2023; Touvron et al. 2023).
	write_profile llama-13b '"hidden_size": 5120, "num_layers": 40, "num_attention_heads": 40,
 "ffn_hidden_size": 13824, "ffn_kind": "swiglu", "vocab_size": 32000, "seq_length": 2048,
 "global_batch_size": 1, "max_position_embeddings": 8192, "tie_word_embeddings": false,
 "bias": false, "position_embedding": "rope", "dtype": "bf16"'
	# Llama-3.1-8B (shared/reference/model_hparams.csv).
	write_profile llama3.1-8b '"hidden_size": 4096, "num_layers": 32, "num_attention_heads": 32,
 "num_kv_heads": 8, "ffn_hidden_size": 14336, "ffn_kind": "swiglu", "vocab_size": 128256,
 "seq_length": 8192, "global_batch_size": 1, "max_position_embeddings": 131072,
 "tie_word_embeddings": false, "bias": false, "position_embedding": "rope", "dtype": "bf16"'
	# GPT-3 175B: the dimensions of profiles/gpt3-175b.json.
	write_profile gpt3-175b '"hidden_size": 12288, "num_layers": 96, "num_attention_heads": 96,
 "num_kv_heads": 96, "head_dim": 128, "ffn_hidden_size": 49152, "ffn_kind": "gelu",
 "vocab_size": 51200, "seq_length": 2048, "global_batch_size": 1,
 "max_position_embeddings": 2048, "tie_word_embeddings": true, "bias": true,
 "position_embedding": "learned", "dtype": "bf16"'
	# Nemotron-4-15B: squared-ReLU MLP (two matrices, no gate).
	write_profile nemotron4-15b '"hidden_size": 6144, "num_layers": 32, "num_attention_heads": 48,
 "num_kv_heads": 8, "ffn_hidden_size": 24576, "ffn_kind": "relu2", "vocab_size": 256000,
 "seq_length": 4096, "global_batch_size": 1, "max_position_embeddings": 4096,
 "tie_word_embeddings": false, "bias": false, "position_embedding": "rope", "dtype": "bf16"'
	# GPT-2 medium as AMP ran it (Megatron-LM 1.1.5, fp16).
	write_profile gpt2-medium '"hidden_size": 1024, "num_layers": 24, "num_attention_heads": 16,
 "ffn_hidden_size": 4096, "ffn_kind": "gelu", "vocab_size": 52256, "seq_length": 1024,
 "global_batch_size": 32, "max_position_embeddings": 1024, "tie_word_embeddings": true,
 "bias": true, "position_embedding": "learned", "dtype": "fp16"'
}

# grok_profile LAYERS: Grok-1 314B (shared/reference/validation README:
# hidden 6144, 48 heads, 8 query groups, head dim 128, 8 experts top-2,
# expert FFN 32768 gated GeLU (three matrices, as SwiGLU), RMSNorm, RoPE,
# untied, no biases, the Llama-3 vocabulary) with LAYERS blocks.
grok_profile() {
	write_profile "grok1-L$1" '"hidden_size": 6144, "num_layers": '"$1"', "num_attention_heads": 48,
 "num_kv_heads": 8, "head_dim": 128, "ffn_hidden_size": 32768, "ffn_kind": "swiglu",
 "vocab_size": 128256, "seq_length": 8192, "global_batch_size": 1, "max_position_embeddings": 8192,
 "tie_word_embeddings": false, "bias": false, "position_embedding": "rope", "dtype": "bf16",
 "normalization": "rmsnorm", "rope_theta": 1000000, "num_experts": 8, "moe_top_k": 2,
 "moe_ffn_hidden_size": 32768'
}

# gpt_profile NAME HEADS HIDDEN LAYERS SEQ: a Megatron GPT (f = 4h, MHA,
# biases, learned positions, tied embeddings, vocabulary padded to 51,200).
gpt_profile() {
	write_profile "$1" '"hidden_size": '"$3"', "num_layers": '"$4"', "num_attention_heads": '"$2"',
 "ffn_hidden_size": '"$(($3 * 4))"', "ffn_kind": "gelu", "vocab_size": 51200,
 "seq_length": '"$5"', "global_batch_size": 1, "max_position_embeddings": '"$5"',
 "tie_word_embeddings": true, "bias": true, "position_embedding": "learned", "dtype": "bf16"'
}

# cluster_src KEY: the cluster file a mapping names by KEY.
cluster_src() {
	if [ -n "${VALIDATE_CLUSTER-}" ]; then
		echo "$VALIDATE_CLUSTER"
		return
	fi
	case $1 in
	selene) echo clusters/selene-a100.json ;;
	dgx-h100) echo clusters/dgx-h100.json ;;
	a100-4xhdr) echo "$data/a100-80gb-4xhdr.json" ;;
	g4dn) echo clusters/aws-g4dn.json ;;
	*) die "no cluster '$1'" ;;
	esac
}

# ==========================================================================
# The machinery.
# ==========================================================================

die() {
	echo "validate: error: $*" >&2
	exit 1
}

# csv_rows FILE: the data rows of FILE, without the header and CRs.
csv_rows() {
	awk 'NR > 1 { sub(/\r$/, ""); if ($0 != "") print }' "$1"
}

# write_profile NAME FIELDS: writes $dir/models/NAME.json.
write_profile() {
	printf '{"name": "%s", "source": "scripts/validate.sh",\n %s}\n' "$1" "$2" >"$dir/models/$1.json"
}

# cluster_file KEY GPUS: prints the path of KEY's cluster file with GPUS / gpus_per_node nodes.
cluster_file() {
	out=$dir/clusters/$1-$2.json
	if [ ! -f "$out" ]; then
		src=$(cluster_src "$1")
		per=$(sed -n 's/.*"gpus_per_node": *\([0-9]*\).*/\1/p' "$src" | head -n 1)
		if [ -z "$per" ] || [ $(($2 % per)) -ne 0 ]; then die "$2 GPUs are not whole nodes of $src"; fi
		sed "s/\"nodes\": *[0-9]*/\"nodes\": $(($2 / per))/" "$src" >"$out"
	fi
	echo "$out"
}

# quote WORD: WORD as the shell reads it back, in $q (a variable, not
# output: a command substitution forks the shell, ~40 words a row).
quote() {
	case $1 in
	*[!A-Za-z0-9_./=+:-]* | "") q="'$(printf '%s' "$1" | sed "s/'/'\\\\''/g")'" ;;
	*) q=$1 ;;
	esac
}

# record FILE SOURCE CONFIGURATION MEASURED OTHER PREDICTED FIT MEM NOTE GROUP LAYOUT:
# one line of $dir/results.txt, tab-separated (the input of validate_stats.awk).
record() {
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$dir/results.txt"
}

# skip_row SOURCE CONFIGURATION MEASURED OTHER WHY: a row not evaluated.
skip_row() {
	record "$file" "$1" "$2" "$3" "$4" - N - "$5" - -
	printf '# %s: %s\n# not evaluated: %s\n\n' "$file" "$2" "$5" >>"$dir/commands.txt"
}

row() {
	src=$1 label=$2 grp=$3 meas=$4 other=$5 model=$dir/models/$6.json
	cl=$(cluster_file "$7" "$8") key=$7
	shift 8
	quote "$bin"
	cmd="$q --model $model --cluster $cl"
	lay=
	for a in "$@"; do
		quote "$a"
		cmd="$cmd $q" lay="$lay $a"
	done
	cmd="$cmd --show-infeasible"
	[ -z "${VALIDATE_RUNS-}" ] || runs_row "$key" "$meas" "$model" "$@"
	printf '# %s: %s\n%s\n\n' "$file" "$label" "$cmd" >>"$dir/commands.txt"
	out=$(eval "$cmd" 2>&1) && rc=0 || rc=$?
	# fit|predicted|memory|note: exit 0 fits; exit 1 with "does not fit" or
	# "fits no strategy" does not fit; anything else is a rejection. Memory:
	# the peak per GPU of the heaviest rank / the GPU's memory, GiB.
	res=$(printf '%s\n' "$out" | awk -v rc="$rc" '
		/^  iteration / && t == "" { t = $2 }
		/^  memory per GPU on pipeline rank / && mem == "" && match($0, /, [0-9.]+ GiB\): [0-9.]+ GiB/) {
			split(substr($0, RSTART + 2, RLENGTH - 2), w, " ")
			mem = sprintf("%.1f/%.0f", w[3], w[1])
		}
		/does not fit|fits no strategy/ { nofit = 1 }
		/error:/ && msg == "" { msg = $0; sub(/^ampplan: error: /, "", msg); gsub(/\t/, " ", msg) }
		END {
			if (mem == "") mem = "-"
			if (rc == 0 && t != "") print "1|" t "|" mem "|"
			else if (rc == 1 && nofit) print "0|" (t == "" ? "-" : t) "|" mem "|"
			else print "R|-|-|exit " rc ": " (msg != "" ? msg : "no iteration line")
		}')
	fit=${res%%|*} res=${res#*|}
	pred=${res%%|*} res=${res#*|}
	record "$file" "$src" "$label" "$meas" "$other" "$pred" "$fit" "${res%%|*}" "${res#*|}" "$grp" "$model$lay"
}

# runs_row KEY MEASURED MODEL OPTIONS...: the row as a line of
# $VALIDATE_RUNS/$file (model,spec,measured_s; the options' "--KEY VALUE"
# pairs as KEY=VALUE,...), and KEY's cluster file in $VALIDATE_RUNS/$file.cluster.
runs_row() {
	rf=$VALIDATE_RUNS/$file
	[ -f "$rf" ] || echo "model,spec,measured_s" >"$rf"
	cluster_src "$1" >"$rf.cluster"
	spec='' rr_meas=$2 rr_model=$3
	shift 3
	while [ $# -ge 2 ]; do
		spec="$spec${spec:+,}${1#--}=$2"
		shift 2
	done
	echo "$rr_model,\"$spec\",$rr_meas" >>"$rf"
}

# self_test: validate_stats.awk on a hand-made case worked out by hand, and
# validate_csv.awk (the recipes' reader) on a small quoted CSV.
#  a.csv, 6 rows that ran: measured 10 20 30 40 50 60, predicted 11 18 33 33
#   45 69 (the last predicted not to fit): errors +10 -10 +10 -17.5 -10 +15%,
#   mape 72.5 / 6 = 12.08 -> 12.1, max 17.5; ranks of the predictions 1 2 3.5
#   3.5 5 6 against 1..6: Pearson of the ranks = 17 / sqrt(17.5 x 17) = 0.9856
#   -> 0.986; false_oom 1 (60 s, predicted no fit); two failed rows, one
#   predicted to fit (missed_oom 1), one not; one row not evaluated.
#   AMP's predictions 1..6 rank like the measurements: spearman 1.000, its
#   errors 90 90 90 90 90 90% (mape 90.0); ampplan's first trial (fits, least
#   predicted) is the failed row predicted 5 s; AMP's first is the 10 s row.
#   No row has a layout group: pairs 0/0.
#  b.csv, ties in the measurements: measured 5 5 7, predicted 1 2 3: average
#   ranks 1.5 1.5 3 against 1 2 3: 1.5 / sqrt(1.5 x 2) = 0.866 (the formula
#   1 - 6 sum d^2 / (n (n^2 - 1)) would give 0.875); errors 80 60 57.1%:
#   mape 65.7, max 80.0.
#  c.csv, layout pairs: group g measured 100 104 110 120 130 (c1 c2 c3 c4
#   c7), predicted 100 90 112 95 112; c5 and c6 in group h with one
#   layout (200 and 300 s, predicted 50 and 10: no pair, one layout).
#   c1-c2 1.04 apart: no pair; c1-c3 1.10 ordered; c1-c4 1.20 not (100 >
#   95); c1-c7 1.30 ordered; c2-c3 1.058 ordered; c2-c4 1.154 ordered;
#   c2-c7 1.25 ordered; c3-c4 1.091 not (112 > 95); c3-c7 1.18 not (a
#   predicted tie); c4-c7 1.083 ordered: pairs 6/9, of the five 15% apart
#   (c1-c4 c1-c7 c2-c4 c2-c7 c3-c7) 3 ordered. Errors 0 13.46 1.82 20.83
#   75 96.67 13.85%: mape 221.63 / 7 = 31.7, max 96.7; prediction ranks 5
#   3 6.5 4 2 1 6.5 against 1 2 3 4 6 7 5: -14 / sqrt(27.5 x 28) = -0.505.
#   Misordered 3 > 0 (9 - ceil(0.97 x 9)) and 2 > 0.
self_test() {
	st=$dir/selftest
	tr "|" "\t" >"$st.in" <<'EOF'
a.csv|t|r1|10|1|11|1|-||-|r1
a.csv|t|r2|20|2|18|1|-||-|r2
a.csv|t|r3|30|3|33|1|-||-|r3
a.csv|t|r4|40|4|33|1|-||-|r4
a.csv|t|r5|50|5|45|1|-||-|r5
a.csv|t|r6|60|6|69|0|-||-|r6
a.csv|t|r7|inf|7|5|1|-||-|r7
a.csv|t|r8|inf|8|4|0|-||-|r8
a.csv|t|r9|inf|9|-|N|-|not run|-|r9
b.csv|t|s1|5|-|1|1|-||-|s1
b.csv|t|s2|5|-|2|1|-||-|s2
b.csv|t|s3|7|-|3|1|-||-|s3
c.csv|t|c1|100|-|100|1|-||g|c1
c.csv|t|c2|104|-|90|1|-||g|c2
c.csv|t|c3|110|-|112|1|-||g|c3
c.csv|t|c4|120|-|95|0|-||g|c4
c.csv|t|c5|200|-|50|1|-||h|x
c.csv|t|c6|300|-|10|1|-||h|x
c.csv|t|c7|130|-|112|1|-||g|c7
EOF
	cat >"$st.want" <<'EOF'
summary a.csv rows=8 mape=12.1 max=17.5 spearman=0.986 false_oom=1 missed_oom=1 pairs=0/0 pairs15=0/0
  AMP's own prediction: spearman=1.000 mape=90.0 max=90.0 over the 6 rows that ran
  ampplan's first trial (fits, least predicted): r7: predicted 5.000 s, measured inf (failed)
  AMP's first trial (least amp_predicted_s): r1: AMP 1.000 s, measured 10.000 s
  best measured: r1: 10.000 s
summary b.csv rows=3 mape=65.7 max=80.0 spearman=0.866 false_oom=0 missed_oom=0 pairs=0/0 pairs15=0/0
summary c.csv rows=7 mape=31.7 max=96.7 spearman=-0.505 false_oom=1 missed_oom=0 pairs=6/9 pairs15=3/5
validate: 10 targets missed: a.csv: mape 12.1 > 4; a.csv: false_oom 1 > 0; a.csv: missed_oom 1 > 0; b.csv: mape 65.7 > 4; b.csv: spearman 0.866 < 0.95; c.csv: mape 31.7 > 4; c.csv: spearman -0.505 < 0.95; c.csv: false_oom 1 > 0; c.csv: pairs misordered 3 > 0; c.csv: pairs 15% apart misordered 2 > 0 (VALIDATE_STRICT=0: exit 0)
EOF
	awk -v strict=0 -f scripts/validate_stats.awk "$st.in" >"$st.out" || {
		echo "validate: self-test: validate_stats.awk failed" >&2
		return 1
	}
	grep -e '^summary' -e "^  AMP's" -e '^  ampplan' -e '^  best' -e '^validate:' "$st.out" >"$st.got"
	# The regression bounds: a.csv within all but missed_oom; b.csv has no
	# line; c.csv within all but the pairs 15% apart (2 misordered > 1).
	printf '# comment\na.csv 13 0.98 1 0 0 0\nc.csv 40 -0.6 1 0 3 1\n' >"$st.lim"
	echo "validate: 5 targets missed: a.csv: missed_oom 1 > 0; b.csv: no line in $st.lim; b.csv: mape 65.7 > -1; b.csv: spearman 0.866 < 0.95; c.csv: pairs 15% apart misordered 2 > 1" >>"$st.want"
	awk -v limits="$st.lim" -f scripts/validate_stats.awk "$st.in" | grep '^validate:' >>"$st.got"
	if ! cmp -s "$st.want" "$st.got"; then
		echo "validate: self-test of scripts/validate_stats.awk failed (want, got):" >&2
		diff "$st.want" "$st.got" >&2 || true
		return 1
	fi
	# validate_csv.awk: the row whose first nine cells are the key, its
	# quoted cells with commas and doubled quotes read whole, CRs dropped;
	# a key of no row prints nothing.
	printf 'k1,k2,k3,k4,k5,k6,k7,k8,k9,a,b\r\nr,M,P,8,32,1,1,2,,"x, y",plain\r\nr,M,P,16,32,1,1,2,,"say ""hi""",z\r\n' >"$st.csv"
	printf 'k1=r\nk2=M\nk3=P\nk4=16\nk5=32\nk6=1\nk7=1\nk8=2\nk9=\na=say "hi"\nb=z\n' >"$st.csv.want"
	awk -v key="r,M,P,16,32,1,1,2," -f scripts/validate_csv.awk "$st.csv" >"$st.csv.got"
	awk -v key="r,M,P,32,32,1,1,2," -f scripts/validate_csv.awk "$st.csv" >>"$st.csv.got"
	if ! cmp -s "$st.csv.want" "$st.csv.got"; then
		echo "validate: self-test of scripts/validate_csv.awk failed (want, got):" >&2
		diff "$st.csv.want" "$st.csv.got" >&2 || true
		return 1
	fi
	[ "$(awk -v key="r,M,P,8,32,1,1,2," -f scripts/validate_csv.awk "$st.csv" | sed -n 's/^a=//p')" = "x, y" ] || {
		echo "validate: self-test of scripts/validate_csv.awk failed: a quoted comma" >&2
		return 1
	}
}

# ==========================================================================
# Main.
# ==========================================================================

rm -rf "$dir"
mkdir -p "$dir/models" "$dir/clusters"
if [ "${1-}" = --self-test ]; then
	self_test && echo "validate: self-test passed"
	exit
fi
self_test

[ -x "$bin" ] || die "no ampplan binary at '$bin' (build it, or set AMPPLAN)"
set -f # no globbing of the options' values
# The A100 numbers of the Hagemann cluster are a copy of clusters/dgx-a100.json's.
a100_numbers() { sed -n '/"gpu_types"/,/"groups"/p' "$1" | grep -v -e '"source"' -e '"note"'; }
a100_numbers clusters/dgx-a100.json >"$dir/a100.want"
a100_numbers "$data/a100-80gb-4xhdr.json" >"$dir/a100.got"
cmp -s "$dir/a100.want" "$dir/a100.got" ||
	echo "validate: warning: the GPU numbers of $data/a100-80gb-4xhdr.json differ from clusters/dgx-a100.json's" >&2

profiles
: >"$dir/results.txt"
: >"$dir/commands.txt"
for file in ${VALIDATE_FILES:-megatron2021_table1_weak_scaling.csv korthikanti2022_table5_iteration_time.csv \
	dgxc_h100_nemo_24.11.csv dgxc_h100_grok1.csv hagemann2023_llama13b_runs.csv \
	amp2022_homogeneous_trials.csv}; do
	[ -f "$data/$file" ] || die "missing $data/$file"
	fn=$(echo "${file%.csv}" | tr '.' '_')
	"map_$fn" "$data/$file"
done
set +f
for f in "$data"/*.csv; do
	case $f in *_recipes.csv) continue ;; esac # read by their measurements' mapping
	[ -n "${VALIDATE_FILES-}" ] || grep -q "^${f##*/}$(printf "\t")" "$dir/results.txt" || echo "validate: warning: $f has no mapping: not evaluated" >&2
done

limits=
[ "${1-}" = --regression ] && limits=$data/limits.txt
awk -v strict="$strict" -v limits="$limits" -f scripts/validate_stats.awk "$dir/results.txt"
