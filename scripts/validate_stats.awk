# validate_stats.awk: the statistics and tables of make validate
# (scripts/validate.sh writes its input; POSIX awk, runs under mawk).
#
# Input, one line per row, tab-separated, files in order:
#   file source configuration measured_s other_s predicted_s fit mem note group layout
# measured_s: seconds per iteration, "inf" when the run failed (out of
# memory); other_s: another predictor's seconds for the row (AMP's own
# amp_predicted_s) or "-"; predicted_s: ampplan's seconds, "-" when it gave
# none; fit: 1 ampplan predicts the strategy fits, 0 it does not, R ampplan
# rejected the configuration (note: its message), N not evaluated (note: why);
# mem: ampplan's peak memory per GPU / the GPU's memory, GiB ("88.7/80"), or "-";
# group: the row's layout group (rows of one model, precision, GPU count,
# sequence and global batch that differ only in layout), or "-" for none;
# layout: what ampplan was given (model and options): two rows of a group
# with the same layout (repeated trials) make no pair.
#
# Per file it prints
#   summary FILE rows=N mape=X max=Y spearman=Z false_oom=K missed_oom=J pairs=P/Q pairs15=R/S
# (N rows evaluated, every row but the N ones; X and Y the mean and largest
# |predicted - measured| / measured in percent over the rows that ran and
# have a prediction, whether or not ampplan predicts they fit; Z Spearman's
# rank correlation of predicted and measured over the same rows, average
# ranks for ties; K rows that ran that ampplan predicts do not fit; J rows
# that failed that ampplan predicts fit; Q the pairs of rows of one group
# whose measured times differ by 5% or more (the slower >= 1.05 x the
# faster) over the rows that ran and have a prediction, P of them that
# ampplan orders as measured (predicted slower for the measured slower; a
# predicted tie is not ordered), S and R the same over the pairs 15% or
# more apart), then, where other_s is given,
# that predictor's own statistics and the first trial of each ranking, then
# the per-row table. Last, one line per missed target and a final line.
#
# Variables (awk -v): strict (1: exit 1 when a target is missed; default 1),
# mape_max (4), spearman_min (0.95), pairs_min (0.97: P >= pairs_min x Q;
# every pair 15% apart ordered, R = S), limits (a file of per-file bounds
# that replace the targets, for a regression check: lines "FILE MAPE_MAX
# SPEARMAN_MIN FALSE_OOM_MAX MISSED_OOM_MAX MISORDERED_MAX
# MISORDERED15_MAX", the last two the most pairs Q - P and S - R; #
# comments).

BEGIN {
	FS = "\t"
	if (strict == "") strict = 1
	if (mape_max == "") mape_max = 4
	if (spearman_min == "") spearman_min = 0.95
	if (pairs_min == "") pairs_min = 0.97
	while (limits != "" && (getline line < limits) > 0) {
		if (line ~ /^[ \t]*(#|$)/) continue
		split(line, w, " ")
		lim_mape[w[1]] = w[2]; lim_rho[w[1]] = w[3]; lim_fo[w[1]] = w[4]; lim_mo[w[1]] = w[5]
		lim_mis[w[1]] = w[6]; lim_mis15[w[1]] = w[7]
	}
}

NF != 11 { printf "validate_stats: line %d has %d fields, not 11\n", NR, NF; bad_input = 1; exit 1 }

{
	f = $1
	if (!(f in nrows)) { files[++nfiles] = f; nrows[f] = 0 }
	k = ++nrows[f]
	src[f, k] = $2; cfg[f, k] = $3; meas[f, k] = $4; other[f, k] = $5
	pred[f, k] = $6; fit[f, k] = $7; mem[f, k] = $8; note[f, k] = $9; grp[f, k] = $10; lay[f, k] = $11
	if (isnum($5)) has_other[f] = 1
}

function isnum(x) { return x ~ /^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/ }
function absf(x) { return x < 0 ? -x : x }

# ranks(v, n, r): r[i] = the rank of v[i] among v[1..n], 1-based, tied
# values sharing the average of their ranks.
function ranks(v, n, r,    i, j, less, eq) {
	for (i = 1; i <= n; i++) {
		less = 0; eq = 0
		for (j = 1; j <= n; j++)
			if (v[j] < v[i]) less++
			else if (v[j] == v[i]) eq++
		r[i] = less + (eq + 1) / 2
	}
}

# spearman(x, y, n): Pearson's correlation of the average ranks of x[1..n]
# and y[1..n] (Spearman's rho, exact with ties); "n/a" when n < 2 or either
# side is constant.
function spearman(x, y, n,    rx, ry, i, mx, my, sxy, sxx, syy) {
	if (n < 2) return "n/a"
	split("", rx); split("", ry)
	ranks(x, n, rx); ranks(y, n, ry)
	mx = (n + 1) / 2; my = mx
	sxy = sxx = syy = 0
	for (i = 1; i <= n; i++) {
		sxy += (rx[i] - mx) * (ry[i] - my)
		sxx += (rx[i] - mx) ^ 2
		syy += (ry[i] - my) ^ 2
	}
	if (sxx == 0 || syy == 0) return "n/a"
	return sprintf("%.3f", sxy / sqrt(sxx * syy))
}

# errstats(f, col): over the rows of file f that ran (numeric measured) with
# a numeric prediction in column col ("pred" or "other"), sets E_n, E_mape,
# E_max (strings, "n/a" when no row) and E_rho.
function errstats(f, col,    k, n, p, e, sum, mx, xs, ys) {
	n = 0; sum = 0; mx = 0
	split("", xs); split("", ys)
	for (k = 1; k <= nrows[f]; k++) {
		p = (col == "pred") ? pred[f, k] : other[f, k]
		if (fit[f, k] == "N" || !isnum(meas[f, k]) || !isnum(p)) continue
		e = absf(p - meas[f, k]) / meas[f, k] * 100
		sum += e; if (e > mx) mx = e
		n++; xs[n] = p + 0; ys[n] = meas[f, k] + 0
	}
	E_n = n
	E_mape = n ? sprintf("%.1f", sum / n) : "n/a"
	E_max = n ? sprintf("%.1f", mx) : "n/a"
	E_rho = spearman(xs, ys, n)
}

# first(f, col, fitonly): the row of f with the least numeric value in
# column col ("pred", "other" or "meas"), only rows predicted to fit when
# fitonly; the first such row in file order on ties; 0 when none.
function first(f, col, fitonly,    k, v, best, bk) {
	bk = 0
	for (k = 1; k <= nrows[f]; k++) {
		v = (col == "pred") ? pred[f, k] : (col == "other") ? other[f, k] : meas[f, k]
		if (!isnum(v) || (fitonly && fit[f, k] != "1")) continue
		if (bk == 0 || v + 0 < best) { best = v + 0; bk = k }
	}
	return bk
}

# pairs(f): over the pairs of rows of file f in one group (not "-") with
# different layouts, both
# evaluated, run (numeric measured) and with a numeric prediction, whose
# measured times differ by 5% or more (the slower >= 1.05 x the faster):
# sets P_n their number, P_k those ampplan orders as measured (strictly:
# the measured slower predicted slower), P_n15 and P_k15 the same over the
# pairs 15% or more apart.
function pairs(f,    i, j, a, b, lo, hi, ok) {
	P_n = P_k = P_n15 = P_k15 = 0
	for (i = 1; i <= nrows[f]; i++) {
		if (grp[f, i] == "-" || fit[f, i] == "N" || !isnum(meas[f, i]) || !isnum(pred[f, i])) continue
		for (j = i + 1; j <= nrows[f]; j++) {
			if (grp[f, j] != grp[f, i] || lay[f, j] == lay[f, i] || fit[f, j] == "N" || !isnum(meas[f, j]) || !isnum(pred[f, j]))
				continue
			a = meas[f, i] + 0; b = meas[f, j] + 0
			lo = a < b ? a : b; hi = a < b ? b : a
			if (hi < 1.05 * lo) continue
			ok = (a < b) ? (pred[f, i] + 0 < pred[f, j] + 0) : (pred[f, i] + 0 > pred[f, j] + 0)
			P_n++; P_k += ok
			if (hi >= 1.15 * lo) { P_n15++; P_k15 += ok }
		}
	}
}

function secs(x) { return isnum(x) ? sprintf("%.3f s", x) : (x == "inf" ? "inf (failed)" : x) }

function miss(f, what) {
	missed_list = missed_list (missed_list == "" ? "" : "; ") f ": " what
	nmissed++
}

function report(f,    k, n, fo, mo, rej, skip, ran, flag, e, oe, hdr, b, a, m, w, fmt, line, xm, xr, xf, xo, xp, xp15) {
	w = length("configuration")
	for (k = 1; k <= nrows[f]; k++) if (length(cfg[f, k]) > w) w = length(cfg[f, k])
	n = 0; fo = 0; mo = 0; rej = 0; skip = 0
	for (k = 1; k <= nrows[f]; k++) {
		if (fit[f, k] == "N") { skip++; continue }
		n++
		ran = isnum(meas[f, k])
		if (fit[f, k] == "R") rej++
		else if (ran && fit[f, k] == "0") fo++
		else if (!ran && fit[f, k] == "1") mo++
	}
	errstats(f, "pred")
	pairs(f)
	printf "summary %s rows=%d mape=%s max=%s spearman=%s false_oom=%d missed_oom=%d pairs=%d/%d pairs15=%d/%d\n",
		f, n, E_mape, E_max, E_rho, fo, mo, P_k, P_n, P_k15, P_n15
	xm = mape_max; xr = spearman_min; xf = 0; xo = 0
	xp = P_n - int(pairs_min * P_n + 0.999999); xp15 = 0
	if (limits != "") {
		if (!(f in lim_mape)) { miss(f, "no line in " limits); xm = -1 }
		else {
			xm = lim_mape[f]; xr = lim_rho[f]; xf = lim_fo[f]; xo = lim_mo[f]
			xp = lim_mis[f]; xp15 = lim_mis15[f]
		}
	}
	if (E_mape == "n/a" || E_mape + 0 > xm) miss(f, "mape " E_mape " > " xm)
	if (E_rho == "n/a" || E_rho + 0 < xr) miss(f, "spearman " E_rho " < " xr)
	if (fo > xf) miss(f, "false_oom " fo " > " xf)
	if (mo > xo) miss(f, "missed_oom " mo " > " xo)
	if (rej > 0) miss(f, "rejected " rej " > 0")
	if (P_n - P_k > xp + 0) miss(f, "pairs misordered " P_n - P_k " > " xp + 0)
	if (P_n15 - P_k15 > xp15 + 0) miss(f, "pairs 15% apart misordered " P_n15 - P_k15 " > " xp15 + 0)
	if (skip > 0)
		printf "  not evaluated: %d row(s) (see the table)\n", skip
	if (has_other[f]) {
		errstats(f, "other")
		printf "  AMP's own prediction: spearman=%s mape=%s max=%s over the %d rows that ran\n",
			E_rho, E_mape, E_max, E_n
		a = first(f, "pred", 1)
		b = first(f, "meas", 0)
		m = first(f, "other", 0)
		if (a)
			printf "  ampplan's first trial (fits, least predicted): %s: predicted %s, measured %s\n",
				cfg[f, a], secs(pred[f, a]), secs(meas[f, a])
		else
			printf "  ampplan's first trial: none (no row is predicted to fit)\n"
		if (m)
			printf "  AMP's first trial (least amp_predicted_s): %s: AMP %s, measured %s\n",
				cfg[f, m], secs(other[f, m]), secs(meas[f, m])
		if (b)
			printf "  best measured: %s: %s\n", cfg[f, b], secs(meas[f, b])
	}
	fmt = "  %-19s %-" w "s %10s %10s %7s"
	hdr = sprintf(fmt, "source", "configuration", "measured", "predicted", "error")
	if (has_other[f]) hdr = hdr sprintf(" %10s %7s", "AMP", "AMP err")
	print hdr sprintf("  %-4s %12s  %s", "fit", "mem GiB", "flag")
	for (k = 1; k <= nrows[f]; k++) {
		ran = isnum(meas[f, k])
		e = (ran && isnum(pred[f, k])) ? sprintf("%+6.1f%%", (pred[f, k] - meas[f, k]) / meas[f, k] * 100) : "-"
		flag = ""
		if (fit[f, k] == "N") flag = "not evaluated: " note[f, k]
		else if (fit[f, k] == "R") flag = "REJECTED: " note[f, k]
		else if (ran && fit[f, k] == "0") flag = "FALSE-OOM"
		else if (!ran && fit[f, k] == "1") flag = "MISSED-OOM"
		else if (!ran) flag = "oom as measured"
		if (fit[f, k] != "N" && fit[f, k] != "R" && !isnum(pred[f, k]))
			flag = flag (flag == "" ? "" : ", ") "no predicted time"
		if (fit[f, k] != "N" && fit[f, k] != "R" && note[f, k] != "")
			flag = flag (flag == "" ? "" : ", ") note[f, k]
		line = sprintf(fmt, src[f, k], cfg[f, k],
			isnum(meas[f, k]) ? sprintf("%.3fs", meas[f, k]) : meas[f, k],
			isnum(pred[f, k]) ? sprintf("%.3fs", pred[f, k]) : pred[f, k], e)
		if (has_other[f]) {
			oe = (ran && isnum(other[f, k])) ? sprintf("%+6.1f%%", (other[f, k] - meas[f, k]) / meas[f, k] * 100) : "-"
			line = line sprintf(" %10s %7s", isnum(other[f, k]) ? sprintf("%.3fs", other[f, k]) : other[f, k], oe)
		}
		line = line sprintf("  %-4s %12s  %s", fit[f, k] == "1" ? "yes" : fit[f, k] == "0" ? "no" : "-", mem[f, k], flag)
		sub(/ +$/, "", line)
		print line
	}
	print ""
}

END {
	if (bad_input) exit 1
	for (i = 1; i <= nfiles; i++) report(files[i])
	if (nmissed == 0 && limits != "") {
		printf "validate: all %d files within the regression bounds of %s\n", nfiles, limits
		exit 0
	}
	if (nmissed == 0) {
		printf "validate: all targets met (mape <= %s, spearman >= %s, no false or missed OOM, pairs >= %s ordered, every pair 15%% apart ordered) in %d files\n",
			mape_max, spearman_min, pairs_min, nfiles
		exit 0
	}
	printf "validate: %d targets missed: %s%s\n", nmissed, missed_list,
		strict ? "" : " (VALIDATE_STRICT=0: exit 0)"
	exit strict ? 1 : 0
}
