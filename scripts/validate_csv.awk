# validate_csv.awk: prints the row of a CSV file (RFC 4180 quoting, as the
# recipes files of tests/data/validation/ write it) whose first nine cells,
# joined by commas, are KEY (awk -v key=...), one NAME=VALUE line per cell,
# NAME from the header; nothing when no row matches. POSIX awk (mawk).

# cells(line, out): splits line into out[1..n] at the commas outside double
# quotes, "" inside quotes read as one quote; returns n.
function cells(line, out,    n, i, c, q, cur) {
	n = 0; q = 0; cur = ""
	for (i = 1; i <= length(line); i++) {
		c = substr(line, i, 1)
		if (q && c == "\"" && substr(line, i + 1, 1) == "\"") { cur = cur c; i++ }
		else if (c == "\"") q = !q
		else if (!q && c == ",") { out[++n] = cur; cur = "" }
		else cur = cur c
	}
	out[++n] = cur
	return n
}

{ sub(/\r$/, "") }
NR == 1 { nh = cells($0, head); next }
{
	n = cells($0, v)
	k = v[1]
	for (i = 2; i <= 9; i++) k = k "," v[i]
	if (k != key) next
	for (i = 1; i <= nh && i <= n; i++) printf "%s=%s\n", head[i], v[i]
	exit
}
