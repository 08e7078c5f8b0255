/* strategy.c: names of recomputation modes, attention kernels
 * and gradient dtypes. */
#include "strategy.h"

#include <stdio.h>
#include <string.h>

static const char *const rc_names[RECOMPUTE_COUNT] = {
	[RECOMPUTE_NONE] = "none",
	[RECOMPUTE_SELECTIVE] = "selective",
	[RECOMPUTE_FULL] = "full",
};

static const char *const cp_names[CP_COMM_COUNT] = {
	[CP_P2P] = "p2p",
	[CP_A2A] = "a2a",
	[CP_A2A_P2P] = "a2a+p2p",
};

static const char *const balance_names[MOE_BALANCE_COUNT] = {
	[MOE_BALANCE_MICRO_BATCH] = "micro-batch",
	[MOE_BALANCE_GLOBAL_BATCH] = "global-batch",
};

static const char *const dispatcher_names[MOE_DISPATCH_COUNT] = {
	[MOE_DISPATCH_ALLTOALL] = "alltoall",
	[MOE_DISPATCH_ALLGATHER] = "allgather",
	[MOE_DISPATCH_FLEX] = "flex",
};

static const char *const attn_names[ATTN_COUNT] = {
	[ATTN_FLASH] = "flash",
	[ATTN_FLASH1] = "flash1",
	[ATTN_FUSED_SOFTMAX] = "fused-softmax",
	[ATTN_UNFUSED] = "unfused",
};

const char *recompute_name(enum recompute r)
{
	return rc_names[r];
}
const char *attention_name(enum attention a)
{
	return attn_names[a];
}
const char *cp_comm_name(enum cp_comm x)
{
	return cp_names[x];
}
const char *moe_balance_name(enum moe_balance x)
{
	return balance_names[x];
}

static const char *const rm_names[RM_COUNT] = { "core_attn", "layernorm", "mlp", "moe_act", "moe",
						"shared_experts", "mla_up_proj" };
static const char *const om_names[OM_COUNT] = { "attn_norm", "qkv_linear", "core_attn", "attn_proj",
						"mlp_norm", "expert_fc1", "moe_act" };

/* The names of mask's bits (names[i] for bit i, count of them), joined
 * by sep into buf. */
static char *modules_name(const char *const *names, size_t count, unsigned mask, char sep,
			  char *buf, size_t n)
{
	size_t w = 0;

	if (n)
		buf[0] = '\0';
	for (size_t i = 0; i < count; i++) {
		if (!(mask & (1u << i)) || w >= n)
			continue;
		if (w)
			w += (size_t)snprintf(buf + w, n - w, "%c", sep);
		if (w < n)
			w += (size_t)snprintf(buf + w, n - w, "%s", names[i]);
	}
	return buf;
}

/* The bits of a '+'-separated list of names[0..count), or -1. */
static int modules_parse(const char *const *names, size_t count, const char *list)
{
	int mask = 0;
	const char *p = list;

	while (*p) {
		size_t len = strcspn(p, "+"), i;

		for (i = 0; i < count; i++)
			if (strlen(names[i]) == len && strncmp(p, names[i], len) == 0)
				break;
		if (i == count)
			return -1;
		mask |= 1 << i;
		p += len;
		if (*p == '+' && *++p == '\0')
			return -1;
	}
	return mask ? mask : -1;
}

char *recompute_modules_name(unsigned mask, char sep, char *buf, size_t n)
{
	return modules_name(rm_names, RM_COUNT, mask, sep, buf, n);
}

int recompute_modules_parse(const char *list)
{
	return modules_parse(rm_names, RM_COUNT, list);
}

char *offload_modules_name(unsigned mask, char sep, char *buf, size_t n)
{
	return modules_name(om_names, OM_COUNT, mask, sep, buf, n);
}

int offload_modules_parse(const char *list)
{
	return modules_parse(om_names, OM_COUNT, list);
}

/* The parallel dimensions of s above 1 among TP, CP, PP and EP. */
static int dimensions(const struct strategy *s)
{
	return (s->tp > 1) + (s->cp > 1) + (s->pp > 1) + (s->ep > 1);
}

int strategy_simpler(const struct strategy *a, const struct strategy *b)
{
	if (dimensions(a) != dimensions(b))
		return dimensions(a) < dimensions(b) ? -1 : 1;
	if ((a->cp > 1) != (b->cp > 1))
		return a->cp > 1 ? 1 : -1;
	if ((a->ep > 1) != (b->ep > 1))
		return a->ep > 1 ? 1 : -1;
	return 0;
}

const char *optim_dtype_name(const struct strategy *s)
{
	return s->moment_bytes == 2 ? "bf16" : "fp32";
}

const char *grad_dtype_name(const struct strategy *s, bool fp16)
{
	return s->grad_bytes == 2 ? (fp16 ? "fp16" : "bf16") : "fp32";
}

static int lookup(const char *const *names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return -1;
}

int recompute_parse(const char *name)
{
	return lookup(rc_names, RECOMPUTE_COUNT, name);
}
int attention_parse(const char *name)
{
	return lookup(attn_names, ATTN_COUNT, name);
}
int cp_comm_parse(const char *name)
{
	return lookup(cp_names, CP_COMM_COUNT, name);
}
int moe_balance_parse(const char *name)
{
	return lookup(balance_names, MOE_BALANCE_COUNT, name);
}
const char *moe_dispatcher_name(enum moe_dispatcher x)
{
	return dispatcher_names[x];
}
int moe_dispatcher_parse(const char *name)
{
	return lookup(dispatcher_names, MOE_DISPATCH_COUNT, name);
}
