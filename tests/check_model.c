/* check_model.c: model loading (profiles and Hugging Face configs), layer
 * derivation, parameter and FLOP totals, profile round trips, bad inputs.
 * Expected values are worked out by hand in the comments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"
#include "model.h"
#include "profile.h"
#include "testutil.h"
#include "util.h"

static struct model *load_ok(const char *path)
{
	struct model *m = NULL;
	struct err e = { "" };

	ck_assert_msg(model_load(&m, path, &e) == 0, "%s: %s", path, e.msg);
	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(m->n_layer, m->layers + 2);
	ck_assert_int_eq(m->layer[0].kind, LAYER_EMBEDDING);
	ck_assert_int_eq(m->layer[m->n_layer - 1].kind, LAYER_HEAD);
	return m;
}

/* Writes text to a new temporary file; returns its malloc'd path. */
static char *write_temp(const char *text)
{
	char *path = xstrdup("/tmp/check_model-XXXXXX");
	int fd = mkstemp(path);
	FILE *f;

	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
	return path;
}

static void assert_same_layer(const struct layer *x, const struct layer *y)
{
	ck_assert_int_eq(x->kind, y->kind);
	ck_assert(x->params == y->params);
	ck_assert(x->expert_params == y->expert_params);
	ck_assert(x->flops_per_token == y->flops_per_token);
	ck_assert(x->act_bytes_per_token == y->act_bytes_per_token);
	ck_assert(x->out_bytes_per_token == y->out_bytes_per_token);
	ck_assert_int_eq(x->n_measure, y->n_measure);
	for (int i = 0; i < x->n_measure; i++) {
		const struct layer_measure *p = &x->measure[i], *q = &y->measure[i];

		ck_assert_str_eq(p->gpu, q->gpu);
		ck_assert_int_eq(p->tp, q->tp);
		ck_assert_int_eq(p->mbs, q->mbs);
		ck_assert_int_eq(p->seq, q->seq);
		ck_assert(p->fwd_s == q->fwd_s);
		ck_assert(p->bwd_s == q->bwd_s);
	}
}

static void assert_same_model(const struct model *a, const struct model *b)
{
	ck_assert_str_eq(a->name, b->name);
	ck_assert_int_eq(a->hidden, b->hidden);
	ck_assert_int_eq(a->layers, b->layers);
	ck_assert_int_eq(a->heads, b->heads);
	ck_assert_int_eq(a->kv_heads, b->kv_heads);
	ck_assert_int_eq(a->head_dim, b->head_dim);
	ck_assert_int_eq(a->ffn, b->ffn);
	ck_assert_int_eq(a->vocab, b->vocab);
	ck_assert_int_eq(a->seq, b->seq);
	ck_assert_int_eq(a->gbs, b->gbs);
	ck_assert_int_eq(a->ffn_kind, b->ffn_kind);
	ck_assert_int_eq(a->tied, b->tied);
	ck_assert_int_eq(a->bias, b->bias);
	ck_assert_int_eq(a->learned_pos, b->learned_pos);
	ck_assert_int_eq(a->max_pos, b->max_pos);
	ck_assert_int_eq(a->dtype_bytes, b->dtype_bytes);
	ck_assert_int_eq(a->experts, b->experts);
	ck_assert_int_eq(a->top_k, b->top_k);
	ck_assert_int_eq(a->moe_ffn, b->moe_ffn);
	ck_assert_int_eq(a->n_layer, b->n_layer);
	for (int i = 0; i < a->n_layer; i++)
		assert_same_layer(&a->layer[i], &b->layer[i]);
}

/* model_profile_json -> temp file -> model_load gives back an equal model. */
static void assert_round_trip(const struct model *m)
{
	char *json = model_profile_json(m), *path = write_temp(json);
	struct model *back = load_ok(path);

	assert_same_model(m, back);
	model_free(back);
	remove(path);
	free(path);
	free(json);
}

/* A GPT model as in Megatron-LM 2021 Table 1: f = 4h, MHA, tied embeddings,
 * biases, learned positions of s rows, GeLU. */
static struct model *gpt_model(int h, int a, int layers, int vocab, int seq)
{
	struct model *m = xcalloc(1, sizeof *m);

	m->name = xstrdup("gpt");
	m->hidden = h;
	m->heads = m->kv_heads = a;
	m->head_dim = h / a;
	m->layers = layers;
	m->ffn = 4 * h;
	m->vocab = vocab;
	m->seq = m->max_pos = seq;
	m->gbs = 1;
	m->ffn_kind = FFN_GELU;
	m->tied = m->bias = m->learned_pos = true;
	m->dtype_bytes = 2;
	model_derive_layers(m);
	return m;
}

START_TEST(test_hf_llama3_8b)
{
	struct model *m = load_ok("tests/data/hf/llama3-8b.json");
	const struct layer *b = &m->layer[1];

	/* No "_name_or_path": the file's base name. */
	ck_assert_str_eq(m->name, "llama3-8b");
	ck_assert_int_eq(m->hidden, 4096);
	ck_assert_int_eq(m->layers, 32);
	ck_assert_int_eq(m->heads, 32);
	ck_assert_int_eq(m->kv_heads, 8);
	ck_assert_int_eq(m->head_dim, 128);
	ck_assert_int_eq(m->ffn, 14336);
	ck_assert_int_eq(m->vocab, 128256);
	ck_assert_int_eq(m->seq, 8192); /* min(max_pos 8192, 8192) */
	ck_assert_int_eq(m->gbs, 512);
	ck_assert_int_eq(m->ffn_kind, FFN_SWIGLU);
	ck_assert(!m->tied && !m->bias && !m->learned_pos);
	ck_assert_int_eq(m->dtype_bytes, 2);
	ck_assert_int_eq(m->experts, 0);
	/* Block: attention 2*4096*4096 + 2*4096*1024 = 33554432 + 8388608
	 * = 41943040; MLP 3*4096*14336 = 176160768; norms 8192;
	 * total 218112000. */
	ck_assert_rel(b->params, 218112000.0, 1e-15);
	/* 2*(41943040 + 176160768) + 4*8192*32*128 = 436207616 + 134217728. */
	ck_assert_rel(b->flops_per_token, 570425344.0, 1e-15);
	/* 18*4096 + 4*14336 = 73728 + 57344. */
	ck_assert_rel(b->act_bytes_per_token, 131072.0, 1e-15);
	ck_assert_rel(b->out_bytes_per_token, 8192.0, 1e-15);
	/* Embedding 128256*4096 = 525336576; head 4096 + 525336576; blocks
	 * 32*218112000 = 6979584000: 8030261248, the published 8.03e9. */
	ck_assert_rel(m->layer[0].params, 525336576.0, 1e-15);
	ck_assert_rel(m->layer[33].params, 525340672.0, 1e-15);
	ck_assert_rel(model_params(m), 8030261248.0, 1e-15);
	/* 32*570425344 + 2*4096*128256 = 18253611008 + 1050673152. */
	ck_assert_rel(model_flops_per_token(m), 19304284160.0, 1e-15);
	ck_assert_rel(m->layer[33].act_bytes_per_token, 16384.0, 1e-15);
	ck_assert_rel(m->layer[33].out_bytes_per_token, 0.0, 0);
	model_free(m);
}
END_TEST

START_TEST(test_hf_mistral_7b)
{
	struct model *m = load_ok("tests/data/hf/mistral-7b.json");

	ck_assert_str_eq(m->name, "mistral-7b");
	ck_assert_int_eq(m->kv_heads, 8);
	ck_assert_int_eq(m->max_pos, 32768);
	ck_assert_int_eq(m->seq, 8192); /* min(32768, 8192) */
	/* Blocks as Llama-3-8B: 32*218112000 = 6979584000; embedding and head
	 * 32000*4096 = 131072000 each, final norm 4096: 7241732096 (7.24e9). */
	ck_assert_rel(model_params(m), 7241732096.0, 1e-15);
	model_free(m);
}
END_TEST

START_TEST(test_hf_qwen2_7b)
{
	struct model *m = load_ok("tests/data/hf/qwen2-7b.json");

	ck_assert_int_eq(m->hidden, 3584);
	ck_assert_int_eq(m->head_dim, 128); /* 3584 / 28 */
	ck_assert_int_eq(m->kv_heads, 4);
	ck_assert_int_eq(m->seq, 8192); /* min(131072, 8192) */
	/* Block: 2*3584^2 + 2*3584*512 = 25690112 + 3670016 = 29360128;
	 * QKV biases 3584 + 2*512 = 4608; MLP 3*3584*18944 = 203685888;
	 * norms 7168: 233057792, x28 = 6525618176. Embedding and head
	 * 152064*3584 = 544997376 each, final norm 3584: 7615616512, the
	 * published count. */
	ck_assert(m->qkv_bias && !m->bias);
	ck_assert_rel(model_params(m), 7615616512.0, 1e-15);
	model_free(m);
}
END_TEST

START_TEST(test_hf_gpt2)
{
	struct model *m = load_ok("tests/data/hf/gpt2.json");
	const struct layer *b = &m->layer[1];

	ck_assert_str_eq(m->name, "gpt2");
	ck_assert_int_eq(m->hidden, 768);
	ck_assert_int_eq(m->layers, 12);
	ck_assert_int_eq(m->heads, 12);
	ck_assert_int_eq(m->kv_heads, 12);
	ck_assert_int_eq(m->head_dim, 64);
	ck_assert_int_eq(m->ffn, 3072); /* n_inner null: 4 * 768 */
	ck_assert_int_eq(m->vocab, 50257);
	ck_assert_int_eq(m->max_pos, 1024);
	ck_assert_int_eq(m->seq, 1024);
	ck_assert_int_eq(m->ffn_kind, FFN_GELU);
	ck_assert(m->tied && m->bias && m->learned_pos);
	ck_assert_int_eq(m->dtype_bytes, 2); /* no torch_dtype: bf16 */
	/* Block 12h^2 + 13h = 7077888 + 9984. */
	ck_assert_rel(b->params, 7087872.0, 1e-15);
	/* 2*12h^2 + 4*s*h = 14155776 + 4*1024*768 = 14155776 + 3145728. */
	ck_assert_rel(b->flops_per_token, 17301504.0, 1e-15);
	/* 34h = 26112 bytes (Korthikanti 2022). */
	ck_assert_rel(b->act_bytes_per_token, 26112.0, 1e-15);
	/* Embedding 50257*768 + 1024*768 = 38597376 + 786432. */
	ck_assert_rel(m->layer[0].params, 39383808.0, 1e-15);
	/* Head: LayerNorm 2*768 + LM head copy 38597376. */
	ck_assert_rel(m->layer[13].params, 38598912.0, 1e-15);
	ck_assert_rel(m->layer[13].flops_per_token, 77194752.0, 1e-15);
	/* 39383808 + 12*7087872 + 1536 = 124439808, GPT-2 small's count. */
	ck_assert_rel(model_params(m), 124439808.0, 1e-15);
	model_free(m);
}
END_TEST

START_TEST(test_hf_mixtral)
{
	struct model *m = load_ok("tests/data/hf/mixtral-8x7b.json");
	const struct layer *b = &m->layer[1];

	ck_assert_str_eq(m->name, "mistralai/Mixtral-8x7B-v0.1");
	ck_assert_int_eq(m->experts, 8);
	ck_assert_int_eq(m->top_k, 2);
	ck_assert_int_eq(m->moe_ffn, 14336);
	/* Experts 8*3*4096*14336 = 8*176160768. */
	ck_assert_rel(b->expert_params, 1409286144.0, 1e-15);
	/* + attention 41943040 + router 4096*8 = 32768 + norms 8192. */
	ck_assert_rel(b->params, 1451270144.0, 1e-15);
	/* 2*(41943040 + 2*176160768 + 32768) + 4*8192*32*128
	 * = 788594688 + 134217728. */
	ck_assert_rel(b->flops_per_token, 922812416.0, 1e-15);
	/* 18*4096 + 4*14336*2 = 73728 + 114688. */
	ck_assert_rel(b->act_bytes_per_token, 188416.0, 1e-15);
	/* 32*1451270144 + 2*131072000 + 4096 = 46702792704 (46.7e9). */
	ck_assert_rel(model_params(m), 46702792704.0, 1e-15);
	model_free(m);
}
END_TEST

START_TEST(test_profile_llama70b)
{
	struct model *m = load_ok("profiles/llama70b.json");

	ck_assert_str_eq(m->name, "Llama-3-70B");
	ck_assert_int_eq(m->n_layer, 82);
	ck_assert_int_eq(m->head_dim, 128);
	/* Block: 2*8192^2 + 2*8192*1024 = 134217728 + 16777216 = 150994944;
	 * MLP 3*8192*28672 = 704643072; norms 16384: 855654400, x80 =
	 * 68452352000; embedding and head 128256*8192 = 1050673152 each, final
	 * norm 8192: 70553706496 (70.55e9). */
	ck_assert_rel(model_params(m), 70553706496.0, 1e-15);
	model_free(m);
}
END_TEST

START_TEST(test_profile_params)
{
	struct model *m = load_ok("profiles/llama405b.json");

	/* Block: 2*16384^2 + 2*16384*1024 = 536870912 + 33554432; MLP
	 * 3*16384*53248 = 2617245696; norms 32768: 3187703808, x126 =
	 * 401650679808; embedding and head 128256*16384 = 2101346304 each,
	 * final norm 16384: 405853388800 (405.85e9). */
	ck_assert_rel(model_params(m), 405853388800.0, 1e-15);
	model_free(m);
	m = load_ok("profiles/llama2-7b.json");
	/* Block 4*4096^2 + 3*4096*11008 + 8192 = 67108864 + 135266304 + 8192
	 * = 202383360, x32 = 6476267520; + 2*131072000 + 4096 = 6738415616. */
	ck_assert_rel(model_params(m), 6738415616.0, 1e-15);
	model_free(m);
	m = load_ok("profiles/gpt3-175b.json");
	/* 12*96*12288^2 + 13*96*12288 + (51200 + 2048)*12288 + final
	 * LayerNorm 2*12288 = 173946175488 + 15335424 + 654311424 + 24576. */
	ck_assert_rel(model_params(m), 174615846912.0, 1e-15);
	model_free(m);
}
END_TEST

static const struct {
	const char *path;
	int seq, gbs;
} profiles[] = {
	{ "profiles/llama70b.json", 8192, 512 },
	{ "profiles/llama3-8b.json", 8192, 512 },
	{ "profiles/llama2-7b.json", 4096, 1024 },
	{ "profiles/gpt3-175b.json", 2048, 1536 },
	{ "profiles/llama405b.json", 8192, 2048 },
	{ "profiles/mixtral-8x7b.json", 4096, 1024 },
};

/* A shipped profile holds exactly what model_derive_layers gives for its
 * dimensions (catches a stale profile after a formula change). */
START_TEST(test_profile_matches_derived)
{
	struct model *m = load_ok(profiles[_i].path), *d = load_ok(profiles[_i].path);

	ck_assert_int_eq(m->seq, profiles[_i].seq);
	ck_assert_int_eq(m->gbs, profiles[_i].gbs);
	model_derive_layers(d);
	assert_same_model(m, d);
	assert_round_trip(m);
	model_free(m);
	model_free(d);
}
END_TEST

static const char *const hf_files[] = {
	"tests/data/hf/llama3-8b.json",
	"tests/data/hf/mistral-7b.json",
	"tests/data/hf/qwen2-7b.json",
	"tests/data/hf/gpt2.json",
	"tests/data/hf/mixtral-8x7b.json",
};

START_TEST(test_hf_round_trip)
{
	struct model *m = load_ok(hf_files[_i]);

	assert_round_trip(m);
	model_free(m);
}
END_TEST

static const char measured_profile[] =
	"{\"name\": \"measured\", \"hidden_size\": 64, \"num_layers\": 3,\n"
	" \"num_attention_heads\": 4, \"ffn_hidden_size\": 256,\n"
	" \"ffn_kind\": \"gelu\", \"vocab_size\": 1000, \"seq_length\": 128,\n"
	" \"global_batch_size\": 8, \"dtype\": \"fp32\",\n"
	" \"layers\": [\n"
	"  {\"kind\": \"embedding\", \"params\": 64000, \"flops_per_token\": 0,\n"
	"   \"activation_bytes_per_token\": 0, \"output_bytes_per_token\": 256},\n"
	"  {\"kind\": \"block\", \"repeat\": 2, \"params\": 50000,\n"
	"   \"flops_per_token\": 200000.5, \"activation_bytes_per_token\": 2176,\n"
	"   \"output_bytes_per_token\": 256, \"measured\": [\n"
	"    {\"gpu\": \"A100-SXM4-80GB\", \"tp\": 1, \"micro_batch_size\": 2,\n"
	"     \"seq_length\": 128, \"forward_s\": 0.00125, \"backward_s\": 0.0025},\n"
	"    {\"gpu\": \"H100-SXM5-80GB\", \"tp\": 2, \"micro_batch_size\": 1,\n"
	"     \"seq_length\": 128, \"forward_s\": 1e-4, \"backward_s\": 0.1}]},\n"
	"  {\"kind\": \"block\", \"params\": 50000, \"expert_params\": 0.5,\n"
	"   \"flops_per_token\": 200000.5, \"activation_bytes_per_token\": 2176,\n"
	"   \"output_bytes_per_token\": 256},\n"
	"  {\"kind\": \"head\", \"params\": 64064, \"flops_per_token\": 128000,\n"
	"   \"activation_bytes_per_token\": 256, \"output_bytes_per_token\": 0}]}\n";

START_TEST(test_profile_measured)
{
	char *path = write_temp(measured_profile), *json;
	struct model *m = load_ok(path);

	ck_assert_int_eq(m->n_layer, 5);
	ck_assert_int_eq(m->kv_heads, 4);  /* default: heads */
	ck_assert_int_eq(m->head_dim, 16); /* 64 / 4 */
	ck_assert_int_eq(m->max_pos, 128); /* default: seq_length */
	ck_assert_int_eq(m->dtype_bytes, 4);
	ck_assert_int_eq(m->layer[1].n_measure, 2);
	ck_assert_int_eq(m->layer[2].n_measure, 2);
	ck_assert_int_eq(m->layer[3].n_measure, 0);
	ck_assert_ptr_ne(m->layer[1].measure, m->layer[2].measure);
	ck_assert_str_eq(m->layer[2].measure[1].gpu, "H100-SXM5-80GB");
	ck_assert_int_eq(m->layer[2].measure[1].tp, 2);
	ck_assert_rel(m->layer[1].measure[0].fwd_s, 0.00125, 1e-15);
	ck_assert_rel(m->layer[3].expert_params, 0.5, 1e-15);
	/* 64000 + 3*50000 + 64064, untied. */
	ck_assert_rel(model_params(m), 278064.0, 1e-15);
	/* 3*200000.5 + 128000. */
	ck_assert_rel(model_flops_per_token(m), 728001.5, 1e-15);
	/* The two measured blocks print as one entry with "repeat": 2. */
	json = model_profile_json(m);
	ck_assert_ptr_nonnull(strstr(json, "\"repeat\":\t2,"));
	ck_assert_ptr_null(strstr(json, "\"repeat\":\t3"));
	assert_round_trip(m);
	/* Deriving replaces the layers and drops the measurements. */
	model_derive_layers(m);
	ck_assert_int_eq(m->layer[1].n_measure, 0);
	ck_assert_ptr_null(m->layer[1].measure);
	/* 12h^2 + 2h with f = 4h, no bias: 49152 + 128. */
	ck_assert_rel(m->layer[1].params, 49280.0, 1e-15);
	free(json);
	remove(path);
	free(path);
	model_free(m);
}
END_TEST

/* Squared ReLU (Nemotron-4): two MLP matrices like GeLU. h = 64, 4 heads
 * of 16 (MHA), f = 256, V = 1000, s = 128, rotary, untied, no bias.
 * Block: attention 2*64*64 + 2*64*64 = 16384, MLP 2*64*256 = 32768,
 * norms 128: 49280 (SwiGLU's three matrices would give 65664); forward
 * FLOPs per token 2 * (16384 + 32768) + 4*128*64 = 131072. Embedding
 * 64000, head 64 + 64000: 226624 in all.
 * MoE, 4 experts of f_e = 128, top 2: experts 4 * 2*64*128 = 65536,
 * router 64*4 = 256: 16384 + 65536 + 256 + 128 = 82304 per block;
 * per token 2 * (16384 + 2 * 16384 + 256) + 32768 = 131584 FLOPs. */
static const char relu2_profile[] =
	"{\"name\": \"relu2\", \"hidden_size\": 64, \"num_layers\": 2,\n"
	" \"num_attention_heads\": 4, \"ffn_hidden_size\": 256,\n"
	" \"ffn_kind\": \"relu2\", \"vocab_size\": 1000, \"seq_length\": 128,\n"
	" \"global_batch_size\": 8}\n";

static const char relu2_moe_profile[] =
	"{\"name\": \"relu2-moe\", \"hidden_size\": 64, \"num_layers\": 2,\n"
	" \"num_attention_heads\": 4, \"ffn_hidden_size\": 256,\n"
	" \"ffn_kind\": \"relu2\", \"vocab_size\": 1000, \"seq_length\": 128,\n"
	" \"global_batch_size\": 8, \"num_experts\": 4, \"moe_top_k\": 2,\n"
	" \"moe_ffn_hidden_size\": 128}\n";

START_TEST(test_profile_relu2)
{
	char *path = write_temp(relu2_profile), *json;
	struct model *m = load_ok(path);

	ck_assert_int_eq(m->ffn_kind, FFN_RELU2);
	ck_assert_rel(m->layer[1].params, 49280.0, 1e-15);
	ck_assert_rel(m->layer[1].flops_per_token, 131072.0, 1e-15);
	ck_assert_rel(model_params(m), 226624.0, 1e-15);
	json = model_profile_json(m);
	ck_assert_ptr_nonnull(strstr(json, "\"relu2\""));
	assert_round_trip(m);
	free(json);
	remove(path);
	free(path);
	model_free(m);

	path = write_temp(relu2_moe_profile);
	m = load_ok(path);
	ck_assert_rel(m->layer[1].expert_params, 65536.0, 1e-15);
	ck_assert_rel(m->layer[1].params, 82304.0, 1e-15);
	ck_assert_rel(m->layer[1].flops_per_token, 131584.0, 1e-15);
	assert_round_trip(m);
	remove(path);
	free(path);
	model_free(m);
}
END_TEST

START_TEST(test_set_seq)
{
	struct model *m = load_ok("tests/data/hf/llama3-8b.json");
	struct err e = { "" };
	double total = model_flops_per_token(m);

	/* 570425344 - 4*32*128*(8192 - 4096) = 570425344 - 67108864. */
	ck_assert_int_eq(model_set_seq(m, 4096, &e), 0);
	ck_assert_int_eq(m->seq, 4096);
	ck_assert_rel(m->layer[1].flops_per_token, 503316480.0, 1e-15);
	ck_assert_rel(m->layer[32].flops_per_token, 503316480.0, 1e-15);
	ck_assert_rel(model_flops_per_token(m), total - 32 * 67108864.0, 1e-15);
	ck_assert_rel(m->layer[0].flops_per_token, 0.0, 0);
	ck_assert_rel(m->layer[33].flops_per_token, 1050673152.0, 1e-15);
	ck_assert_int_eq(model_set_seq(m, 8192, &e), 0);
	ck_assert_rel(model_flops_per_token(m), total, 1e-15);
	ck_assert_int_eq(model_set_seq(m, 0, &e), -1);
	ck_assert_str_eq(e.msg, "the sequence length must be an integer in "
				"[1, 10000000], not 0");
	ck_assert_int_eq(m->seq, 8192);
	ck_assert_rel(model_flops_per_token(m), total, 1e-15);
	model_free(m);
	/* Learned positions: GPT-2 has 1024 rows. */
	m = load_ok("tests/data/hf/gpt2.json");
	ck_assert_int_eq(model_set_seq(m, 2048, &e), -1);
	ck_assert_str_eq(e.msg, "the sequence length must be at most "
				"'max_position_embeddings' (1024) with learned "
				"positions, not 2048");
	ck_assert_int_eq(model_set_seq(m, 512, &e), 0);
	model_free(m);
}
END_TEST

/* Narayanan et al. 2021 (Megatron-LM) Table 1, from
 * shared/reference/validation/megatron2021_table1_weak_scaling.csv:
 * published params_B, heads, hidden, layers; V = 51200, s = 2048. */
static const struct {
	double params_b;
	int heads, hidden, layers;
} table1[] = {
	{ 1.7, 24, 2304, 24 },
	{ 3.6, 32, 3072, 30 },
	{ 7.5, 32, 4096, 36 },
	{ 18.4, 48, 6144, 40 },
	{ 39.1, 64, 8192, 48 },
	{ 76.1, 80, 10240, 60 },
	{ 145.6, 96, 12288, 80 },
	{ 310.1, 128, 16384, 96 },
	{ 529.6, 128, 20480, 105 },
	{ 1008.0, 160, 25600, 128 },
};

START_TEST(test_megatron_table1)
{
	double h = table1[_i].hidden, L = table1[_i].layers, V = 51200, s = 2048;
	struct model *m = gpt_model(table1[_i].hidden, table1[_i].heads,
				    table1[_i].layers, 51200, 2048);
	/* Eq. 2: P = 12 L h^2 (1 + 13/(12h) + (V + s)/(12 L h)). It leaves
	 * out the final LayerNorm (weight and bias, 2h), which the model's
	 * head counts. */
	double eq2 = 12 * L * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * L * h));
	/* Korthikanti 2022: 72 B s L h^2 (1 + s/(6h) + V/(12 L h)) FLOPs per
	 * iteration without recomputation = 3 x forward, so forward per token
	 * is 24 L h^2 (1 + s/(6h) + V/(12 L h)). */
	double fwd = 24 * L * h * h * (1 + s / (6 * h) + V / (12 * L * h));

	ck_assert_rel(model_params(m) - 2 * h, eq2, 1e-9);
	ck_assert_rel(model_params(m), eq2, 1e-5);
	ck_assert_msg(fabs(model_params(m) - table1[_i].params_b * 1e9) <= 0.05e9,
		      "params %.6g vs published %.1fB", model_params(m),
		      table1[_i].params_b);
	ck_assert_rel(model_flops_per_token(m), fwd, 1e-12);
	model_free(m);
}
END_TEST

/* Measured points must name GPU types of the cluster: a typo would make the
 * cost model silently use its analytic time (issue 13, item 7). */
START_TEST(test_check_gpus)
{
	char *path = write_temp(measured_profile);
	struct model *m = load_ok(path), *plain = load_ok("tests/data/tiny-2-layers.json");
	struct gpu_type both[] = { { .name = "H100-SXM5-80GB" }, { .name = "A100-SXM4-80GB" } };
	struct gpu_type one[] = { { .name = "H100-SXM5-80GB" }, { .name = "A100-SXM4-40GB" } };
	struct cluster ok = { .name = "both", .gpu = both, .n_gpu = 2 };
	struct cluster typo = { .name = "mixed", .gpu = one, .n_gpu = 2 };
	struct err e = { "" };

	ck_assert_int_eq(model_check_gpus(m, &ok, &e), 0);
	ck_assert_int_eq(model_check_gpus(plain, &typo, &e), 0);
	ck_assert_int_eq(model_check_gpus(m, &typo, &e), -1);
	ck_assert_str_eq(e.msg, "layer 1: measured point for GPU type 'A100-SXM4-80GB', "
				"which cluster 'mixed' does not define (its types: "
				"H100-SXM5-80GB, A100-SXM4-40GB)");
	model_free(m);
	model_free(plain);
	remove(path);
	free(path);
}
END_TEST

/* One defect per file; the message names the file and the field. */
static const struct {
	const char *file, *want;
} bad[] = {
	{ "model-missing-hidden.json", "missing field 'hidden_size'" },
	{ "model-negative-layers.json", "field 'num_layers' must be an integer in [1, 10000]" },
	{ "model-nonint-heads.json", "field 'num_attention_heads' must be an integer" },
	{ "model-absurd-hidden.json", "field 'hidden_size' must be an integer in [1, 1000000]" },
	{ "model-ffn-kind.json", "field 'ffn_kind' must be 'gelu', 'swiglu' or 'relu2', not 'relu'" },
	{ "model-heads-divide.json", "field 'num_attention_heads' must divide 'hidden_size'" },
	{ "model-kv-divide.json", "field 'num_kv_heads' must divide 'num_attention_heads'" },
	{ "model-layers-count.json", "field 'layers' must expand to num_layers + 2 = 4 entries" },
	{ "model-layers-order.json", "field 'layers[0].kind' must be 'embedding', not 'head'" },
	{ "model-layer-kind.json", "field 'layers[1].kind' must be 'embedding', 'block' or 'head', not 'mlp'" },
	{ "model-layer-params.json", "field 'layers[1].params' must be a number" },
	{ "model-measured-tp.json", "field 'layers[1].measured[0].tp' must be an integer" },
	{ "model-measured-time.json", "field 'layers[1].measured[0].forward_s' must be a number in [1e-09, " },
	{ "model-expert-params.json", "field 'layers[1].expert_params' must be a number" },
	{ "model-layers-type.json", "field 'layers' must be an array" },
	{ "model-hf-type.json", "field 'model_type' is 'bert', which is not supported (supported: llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, gemma2, gemma3_text, phi3, deepseek_v2, deepseek_v3, llama4_text, olmo2, falcon, gptj, gpt2)" },
	{ "model-hf-kv.json", "field 'num_key_value_heads' must divide 'num_attention_heads'" },
	{ "model-hf-missing.json", "missing field 'intermediate_size'" },
	{ "model-hf-dtype.json", "field 'torch_dtype' must be 'bfloat16', 'float16' or 'float32', not 'int8'" },
	{ "model-dtype.json", "field 'dtype' must be 'bf16', 'fp16' or 'fp32', not 'fp8'" },
	{ "model-top-k.json", "field 'moe_top_k' must be an integer in [1, 4]" },
	{ "model-moe-no-experts.json", "field 'num_experts' must be positive" },
	{ "model-unknown-field.json", "unknown field 'hiden_size'" },
	{ "model-seq-pos.json", "field 'seq_length' must be at most 'max_position_embeddings' (64)" },
	{ "model-gbs-zero.json", "field 'global_batch_size' must be an integer" },
	{ "model-name-type.json", "field 'name' must be a non-empty string" },
	{ "model-seq-string.json", "field 'seq_length' must be an integer" },
	{ "model-qdim.json", "field 'num_attention_heads' times 'head_dim' must be at most" },
	{ "model-root-array.json", "the document must be a JSON object" },
	{ "model-duplicate-key.json", "duplicate key 'vocab_size'" },
	/* Line 4 is `<TAB>"num_layers": 2,` after `"hidden_size": 64` with no
	 * comma: the parser stops at its '"', column 2 (the tab is column 1). */
	{ "model-malformed.json", "model-malformed.json:4:2: malformed JSON" },
	/* An empty file ends at once: line 1, column 1. */
	{ "model-empty.json", "model-empty.json:1:1: malformed JSON" },
};

START_TEST(test_bad_file)
{
	char path[256];
	struct model *m = (struct model *)&m;
	struct err e = { "" };

	snprintf(path, sizeof path, "tests/data/bad/%s", bad[_i].file);
	ck_assert_int_eq(model_load(&m, path, &e), -1);
	ck_assert_ptr_null(m);
	ck_assert_msg(strncmp(e.msg, path, strlen(path)) == 0,
		      "'%s' does not start with the file name", e.msg);
	ck_assert_msg(strstr(e.msg, bad[_i].want), "'%s' lacks '%s'", e.msg,
		      bad[_i].want);
}
END_TEST

/* A packed-document histogram (tests/data/llama70b-docs.json: a quarter
 * of the tokens each in documents of 4,096, 32,768, 131,072 and 1,048,576
 * tokens). The keys per token over a single document's, by hand:
 * - at 131,072 tokens the two longest bins are cut at the sequence:
 *   (4096 + 32768 + 131072 + 131072) / 4 / 131072 = 299008 / 524288 =
 *   0.5703125;
 * - at 1,048,576: (4096 + 32768 + 131072 + 1048576) / 4 / 1048576 =
 *   1216512 / 4194304 = 0.2900390625;
 * - at 4,096 every document fills the sequence: 1;
 * - without a histogram: 1. */
START_TEST(test_doc_share)
{
	struct model *m = load_ok("tests/data/llama70b-docs.json");

	ck_assert_int_eq(m->n_doc, 4);
	ck_assert_int_eq(m->doc[3].tokens, 1048576);
	ck_assert_double_eq(m->doc[1].share, 0.25);
	ck_assert_double_eq(model_doc_share(m, 131072), 0.5703125);
	ck_assert_double_eq(model_doc_share(m, 1048576), 0.2900390625);
	ck_assert_double_eq(model_doc_share(m, 4096), 1);
	m->n_doc = 0;
	ck_assert_double_eq(model_doc_share(m, 131072), 1);
	model_free(m);
}
END_TEST

START_TEST(test_missing_file)
{
	struct model *m = NULL;
	struct err e = { "" };

	ck_assert_int_eq(model_load(&m, "tests/data/no-such-model.json", &e), -1);
	ck_assert_ptr_null(m);
	ck_assert_str_eq(e.msg, "cannot open 'tests/data/no-such-model.json': "
				"No such file or directory");
	model_free(NULL);
}
END_TEST

static Suite *model_suite(void)
{
	Suite *s = suite_create("model");
	TCase *tc = tcase_create("model");
	int n_profiles = (int)(sizeof profiles / sizeof profiles[0]);
	int n_hf = (int)(sizeof hf_files / sizeof hf_files[0]);
	int n_table1 = (int)(sizeof table1 / sizeof table1[0]);
	int n_bad = (int)(sizeof bad / sizeof bad[0]);

	tcase_add_test(tc, test_hf_llama3_8b);
	tcase_add_test(tc, test_hf_mistral_7b);
	tcase_add_test(tc, test_hf_qwen2_7b);
	tcase_add_test(tc, test_hf_gpt2);
	tcase_add_test(tc, test_hf_mixtral);
	tcase_add_test(tc, test_profile_llama70b);
	tcase_add_test(tc, test_profile_params);
	tcase_add_loop_test(tc, test_profile_matches_derived, 0, n_profiles);
	tcase_add_loop_test(tc, test_hf_round_trip, 0, n_hf);
	tcase_add_test(tc, test_profile_measured);
	tcase_add_test(tc, test_check_gpus);
	tcase_add_test(tc, test_profile_relu2);
	tcase_add_test(tc, test_set_seq);
	tcase_add_loop_test(tc, test_megatron_table1, 0, n_table1);
	tcase_add_loop_test(tc, test_bad_file, 0, n_bad);
	tcase_add_test(tc, test_missing_file);
	tcase_add_test(tc, test_doc_share);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(model_suite());
}
