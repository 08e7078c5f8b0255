/* check_hf.c: Hugging Face config.json import (hf.c) of every supported
 * model_type: parameter totals of the real configs of tests/data/hf/ (verbatim
 * copies of shared/reference/hf-configs/) worked out by hand from each config
 * and checked against the published counts, the fields a trainer needs, the
 * per-block FLOPs and activations of the new architectures (sliding windows,
 * MLA, shared experts, dense first blocks, parallel blocks), the profile
 * round trip, and the refusal of other model types. */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model.h"
#include "profile.h"
#include "testutil.h"
#include "util.h"

#define DIR "tests/data/hf/"

static struct model *load(const char *file)
{
	struct model *m = NULL;
	struct err e = { "" };
	char path[256];

	snprintf(path, sizeof path, DIR "%s", file);
	ck_assert_msg(model_load(&m, path, &e) == 0, "%s: %s", path, e.msg);
	ck_assert_int_eq(m->n_layer, m->layers + 2);
	return m;
}

/* file of tests/data/hf with the number key set to value (a copy in /tmp,
 * removed), loaded (caller frees). */
static struct model *load_edited(const char *file, const char *key, double value)
{
	char path[256], tmp[] = "/tmp/check_hf-edit-XXXXXX", *text;
	struct model *m = NULL;
	struct err e = { "" };
	cJSON *doc;
	FILE *f;
	int fd;

	snprintf(path, sizeof path, DIR "%s", file);
	ck_assert_ptr_nonnull(text = read_file(path));
	ck_assert_ptr_nonnull(doc = cJSON_Parse(text));
	free(text);
	cJSON_DeleteItemFromObjectCaseSensitive(doc, key);
	cJSON_AddNumberToObject(doc, key, value);
	text = cJSON_Print(doc);
	cJSON_Delete(doc);
	ck_assert_int_ge(fd = mkstemp(tmp), 0);
	ck_assert_ptr_nonnull(f = fdopen(fd, "w"));
	fputs(text, f);
	fclose(f);
	cJSON_free(text);
	ck_assert_msg(model_load(&m, tmp, &e) == 0, "%s with %s %g: %s", file, key, value, e.msg);
	remove(tmp);
	return m;
}

/* Notation of the comments: h hidden, a heads, g KV heads, d head_dim, f
 * intermediate_size, L blocks, V vocabulary. A Llama-style block has
 * attention 2*h*a*d + 2*h*g*d, a SwiGLU MLP 3*h*f and two RMSNorms 2h; the
 * model adds the embedding V*h, the final norm h and the LM head V*h unless
 * tied. "pub" is the README table of shared/reference/hf-configs. */
static const struct {
	const char *file, *type;
	double count; /* by hand, below */
	double pub;   /* published */
	double rel;   /* allowed |count - pub| / pub */
} configs[] = {
	/* h 4096, a 32, g 8, d 128, f 14336, L 32, V 128256: block
	 * 2*4096*4096 + 2*4096*1024 = 41943040, + 3*4096*14336 = 176160768,
	 * + 8192 = 218112000; x32 = 6979584000; + 2*128256*4096 = 1050673152
	 * + 4096 = 8030261248. */
	{ "meta-llama_Llama-3.1-8B.json", "llama", 8030261248.0, 8.03e9, 0.005 },
	/* h 8192, a 64, g 8, d 128, f 28672, L 80: block 2*8192^2 +
	 * 2*8192*1024 = 150994944, + 3*8192*28672 = 704643072, + 16384 =
	 * 855654400; x80 = 68452352000; + 2*128256*8192 = 2101346304 + 8192
	 * = 70553706496. */
	{ "meta-llama_Llama-3.1-70B.json", "llama", 70553706496.0, 70.6e9, 0.005 },
	/* h 2048, a 32, g 8, d 64, f 8192, L 16, tied: block 2*2048*2048 +
	 * 2*2048*512 = 10485760, + 3*2048*8192 = 50331648, + 4096 = 60821504;
	 * x16 = 973144064; + 128256*2048 = 262668288 + 2048 = 1235814400. */
	{ "meta-llama_Llama-3.2-1B.json", "llama", 1235814400.0, 1.24e9, 0.005 },
	/* Llama-3.1-8B's blocks, 6979584000; V 32768: + 2*32768*4096 =
	 * 268435456 + 4096 = 7248023552. */
	{ "mistralai_Mistral-7B-v0.3.json", "mistral", 7248023552.0, 7.25e9, 0.005 },
	/* Block: attention 41943040, 8 experts 8*3*4096*14336 = 1409286144,
	 * router 4096*8 = 32768, norms 8192: 1451270144; x32 = 46440644608;
	 * + 2*32000*4096 = 262144000 + 4096 = 46702792704. */
	{ "mistralai_Mixtral-8x7B-v0.1.json", "mixtral", 46702792704.0, 46.7e9, 0.005 },
	/* h 3584, a 28, g 4, d 128, f 18944, L 28, V 152064: block
	 * 2*3584^2 + 2*3584*512 = 29360128, q/k/v biases 3584 + 1024 = 4608,
	 * 3*3584*18944 = 203685888, 7168: 233057792; x28 = 6525618176; +
	 * 2*152064*3584 = 1089994752 + 3584 = 7615616512. */
	{ "Qwen_Qwen2-7B.json", "qwen2", 7615616512.0, 7.62e9, 0.005 },
	/* h 8192, a 64, g 8, d 128, f 29568, L 80, V 152064: block
	 * 150994944 + biases (64 + 16)*128 = 10240 + 3*8192*29568 = 726663168
	 * + 16384 = 877684736; x80 = 70214778880; + 2*152064*8192 =
	 * 2491416576 + 8192 = 72706203648, the safetensors total. */
	{ "Qwen_Qwen2.5-72B-Instruct.json", "qwen2", 72706203648.0, 72706203648.0, 1e-15 },
	/* h 2048, a 16, g 8, d 128, f 6144, L 28, tied, q/k norms 2*128:
	 * block 2*2048*2048 + 2*2048*1024 = 12582912, + 3*2048*6144 =
	 * 37748736, + 4096 + 256 = 50336000; x28 = 1409408000 (the card's
	 * "1.4B non-embedding"); + 151936*2048 = 311164928 + 2048 =
	 * 1720574976. The card's "1.7B" is that rounded down to two digits:
	 * 1.2% below the count. */
	{ "Qwen_Qwen3-1.7B.json", "qwen3", 1720574976.0, 1.7e9, 0.013 },
	/* h 4096, a 32, g 8, d 128, f 12288, L 36: block 41943040 +
	 * 3*4096*12288 = 150994944 + 8192 + 256 = 192946432; x36 =
	 * 6946071552; + 2*151936*4096 = 1244659712 + 4096 = 8190735360. */
	{ "Qwen_Qwen3-8B.json", "qwen3", 8190735360.0, 8.2e9, 0.005 },
	/* h 2048, a 32, g 4, d 128, L 48, 128 experts of 768: block
	 * 2*2048*4096 + 2*2048*512 = 18874368, q/k norms 256, experts
	 * 128*3*2048*768 = 603979776, router 2048*128 = 262144, norms 4096:
	 * 623120640; x48 = 29909790720; + 2*151936*2048 = 622329856 + 2048 =
	 * 30532122624. */
	{ "Qwen_Qwen3-30B-A3B.json", "qwen3_moe", 30532122624.0, 30.5e9, 0.005 },
	/* h 2048, a = g = 16, d 128, L 24, 60 experts of 1408, a shared
	 * expert of 5632 and its gate 2048: block 4*2048^2 = 16777216, biases
	 * 3*2048 = 6144, experts 60*3*2048*1408 = 519045120, router 2048*60 =
	 * 122880, shared 3*2048*5632 = 34603008, gate 2048, norms 4096:
	 * 570560512; x24 = 13693452288; + 2*151936*2048 = 622329856 + 2048 =
	 * 14315784192. */
	{ "Qwen_Qwen1.5-MoE-A2.7B.json", "qwen2_moe", 14315784192.0, 14.3e9, 0.005 },
	/* h 7168, a 128, MLA: q_a 7168*1536 = 11010048, its norm 1536, q_b
	 * 1536*128*192 = 37748736, kv_a 7168*(512 + 64) = 4128768, its norm
	 * 512, kv_b 512*128*(128 + 128) = 16777216, o 128*128*7168 =
	 * 117440512: 187107328; norms 14336. Dense blocks (3): + 3*7168*18432
	 * = 396361728: 583483392, x3 = 1750450176. MoE blocks (58): 256
	 * experts 256*3*7168*2048 = 11274289152, shared 44040192, router
	 * 256*7168 = 1835008 and its bias 256: 11507286272, x58 =
	 * 667422603776. + 2*129280*7168 = 1853358080 + 7168 = 671026419200.
	 * The published 671B is this: the multi-token-prediction module
	 * (num_nextn_predict_layers 1, about 14B more in the checkpoint's
	 * 685B) is not counted. */
	{ "deepseek-ai_DeepSeek-R1.json", "deepseek_v3", 671026419200.0, 671e9, 0.005 },
	/* DeepSeek-V2-Lite (the model card's config.json: no q low-rank, no
	 * router bias, untied): h 2048, a 16, MLA: q 2048*16*192 = 6291456,
	 * kv_a 2048*(512 + 64) = 1179648, its norm 512, kv_b 512*16*256 =
	 * 2097152, o 16*128*2048 = 4194304: 13762560; norms 4096. Dense block
	 * (1): + 3*2048*10944 = 67239936: 81007104. MoE blocks (26): 64
	 * experts 64*3*2048*1408 = 553648128, 2 shared 17301504, router
	 * 2048*64 = 131072: 584847872, x26 = 15206044672. + 2*102400*2048 =
	 * 419430400 + 2048 = 15706484224 (published 15.7B). */
	{ "deepseek-ai_DeepSeek-V2-Lite.json", "deepseek_v2", 15706484224.0, 15.7e9, 0.005 },
	/* DeepSeek-V2: h 5120, a 128, MLA: q_a 5120*1536 = 7864320, its norm
	 * 1536, q_b 1536*128*192 = 37748736, kv_a 5120*576 = 2949120, its
	 * norm 512, kv_b 512*128*256 = 16777216, o 128*128*5120 = 83886080:
	 * 149225472; norms 10240. Dense block (1): + 3*5120*12288 =
	 * 188743680: 337981440. MoE blocks (59): 160 experts
	 * 160*3*5120*1536 = 3774873600, 2 shared 47185920, router 5120*160 =
	 * 819200: 3972116480, x59 = 234354872320. + 2*102400*5120 =
	 * 1048576000 + 5120 = 235741434880 (published 236B). */
	{ "deepseek-ai_DeepSeek-V2.json", "deepseek_v2", 235741434880.0, 236e9, 0.005 },
	/* h 3584, a 16, g 8, d 256, f 14336, L 42, tied, four norms: block
	 * 3584*4096*2 + 3584*2048*2 = 44040192, + 3*3584*14336 = 154140672,
	 * + 4*3584 = 14336: 198195200; x42 = 8324198400; + 256000*3584 =
	 * 917504000 + 3584 = 9241705984. */
	{ "google_gemma-2-9b.json", "gemma2", 9241705984.0, 9.24e9, 0.005 },
	/* h 3072, a = g = 32, d 96, f 8192, L 32, V 32064: block 4*3072^2 =
	 * 37748736 + 3*3072*8192 = 75497472 + 6144 = 113252352; x32 =
	 * 3624075264; + 2*32064*3072 = 197001216 + 3072 = 3821079552. */
	{ "microsoft_Phi-3.5-mini.json", "phi3", 3821079552.0, 3.82e9, 0.005 },
	/* h 4096, a = g = 32, d 128, f 11008, L 32, V 100352, q/k norms over
	 * all heads (32 + 32)*128: block 4*4096^2 = 67108864 + 8192 +
	 * 3*4096*11008 = 135266304 + 8192 = 202391552; x32 = 6476529664; +
	 * 2*100352*4096 = 822083584 + 4096 = 7298617344. */
	{ "allenai_OLMo-2-7B.json", "olmo2", 7298617344.0, 7.3e9, 0.005 },
	/* h 5120, a 40, g 8, d 128, L 48, all MoE: 16 experts of 8192 and a
	 * shared one, L2 q/k norms without weights: block 2*5120*5120 +
	 * 2*5120*1024 = 62914560, experts 16*3*5120*8192 = 2013265920,
	 * shared 125829120, router 81920, norms 10240: 2202101760; x48 =
	 * 105700884480; + 2*202048*5120 = 2068971520 + 5120 = 107769861120.
	 * The published 109B is the multimodal model, its vision encoder
	 * included, which this text config does not describe: 1.1% more. */
	{ "meta-llama_Llama-4-Scout-17B-16E-text.ASSEMBLED.json", "llama4_text",
	  107769861120.0, 109e9, 0.012 },
	/* h 768, 12 blocks of 12h^2 + 13h = 7087872 (f = 4h, biases, two
	 * LayerNorms); wte 50257*768 = 38597376, wpe 1024*768 = 786432, ln_f
	 * 1536, tied: 85054464 + 39383808 + 1536 = 124439808. */
	{ "openai-community_gpt2.json", "gpt2", 124439808.0, 124e6, 0.005 },
	/* h 4544, a 71, multi-query g 1, d 64, f 4h = 18176, L 32, tied, no
	 * linear biases, one LayerNorm (weight and bias) per block: block
	 * 2*4544^2 + 2*4544*64 = 41877504, + 2*4544*18176 = 165183488, +
	 * 9088 = 207070080; x32 = 6626242560; + 65024*4544 = 295469056, ln_f
	 * 9088: 6921720704. The published "7 B" is that rounded: 1.1% above
	 * the count. */
	{ "tiiuae_falcon-7b-instruct.json", "falcon", 6921720704.0, 7e9, 0.012 },
	/* h 4096, a 16, d 256, f 4h = 16384, L 28, untied: block 4*4096^2 =
	 * 67108864, MLP 2*4096*16384 = 134217728 + biases 16384 + 4096, one
	 * LayerNorm 8192: 201355264; x28 = 5637947392; + wte 50400*4096 =
	 * 206438400, ln_f 8192, LM head 206438400 + bias 50400: 6050882784. */
	{ "EleutherAI_gpt-j-6b.json", "gptj", 6050882784.0, 6.05e9, 0.005 },
	/* Not in hf-configs: Gemma-3-1B's published config.json, written out
	 * (gemma3-1b.json). h 1152, a 4, g 1, d 256, f 6912, L 26, V 262144,
	 * tied, four norms, q/k norms 2*256: block 1152*1024*2 + 1152*256*2
	 * = 2949120, + 512, + 3*1152*6912 = 23887872, + 4*1152 = 4608:
	 * 26842112; x26 = 697894912; + 262144*1152 = 301989888 + 1152 =
	 * 999885952 (the card: 1B). */
	{ "gemma3-1b.json", "gemma3_text", 999885952.0, 1e9, 0.005 },
};
#define N_CONFIGS (int)(sizeof configs / sizeof configs[0])

START_TEST(test_config_params)
{
	struct model *m = load(configs[_i].file);

	ck_assert_str_eq(m->model_type, configs[_i].type);
	ck_assert_rel(model_params(m), configs[_i].count, 1e-15);
	ck_assert_rel(model_params(m), configs[_i].pub, configs[_i].rel);
	model_free(m);
}
END_TEST

/* Every file of shared/reference/hf-configs is in configs[] (when that
 * directory is there: a checkout of the repository alone has only the
 * copies). */
START_TEST(test_all_reference_configs)
{
	static const char *const dir = "../shared/reference/hf-configs/";
	char cmd[256];
	FILE *p;
	char line[512];
	int n = 0;

	if (access(dir, R_OK) != 0)
		return;
	snprintf(cmd, sizeof cmd, "ls %s | grep '\\.json$'", dir);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof line, p)) {
		int k = 0;
		char path[600];
		char *a, *b;

		line[strcspn(line, "\n")] = '\0';
		while (k < N_CONFIGS && strcmp(configs[k].file, line) != 0)
			k++;
		ck_assert_msg(k < N_CONFIGS, "%s is not in configs[]", line);
		snprintf(path, sizeof path, "%s%s", dir, line);
		a = read_file(path);
		snprintf(path, sizeof path, DIR "%s", line);
		b = read_file(path);
		ck_assert_msg(a && b && strcmp(a, b) == 0, "%s differs from its copy", line);
		free(a);
		free(b);
		n++;
	}
	pclose(p);
	/* all but gemma3-1b.json and the two DeepSeek-V2 configs, which
	 * shared/reference does not hold */
	ck_assert_int_eq(n, N_CONFIGS - 3);
}
END_TEST

/* Llama 3.1: the fields of its config a trainer must be told. */
START_TEST(test_llama31_fields)
{
	struct model *m = load("meta-llama_Llama-3.1-8B.json");

	ck_assert_int_eq(m->norm, NORM_RMS);
	ck_assert(m->norm_eps == 1e-5);
	ck_assert(m->rope_theta == 500000);
	ck_assert_str_eq(m->rope_scaling.type, "llama3");
	ck_assert(m->rope_scaling.factor == 8);
	ck_assert(m->rope_scaling.low_freq_factor == 1);
	ck_assert(m->rope_scaling.high_freq_factor == 4);
	ck_assert_int_eq(m->rope_scaling.original_max_pos, 8192);
	ck_assert(!m->qkv_bias && !m->qk_norm && !m->bias && !m->tied);
	ck_assert_int_eq(m->sliding_window, 0);
	ck_assert_int_eq(m->experts, 0);
	model_free(m);
}
END_TEST

/* Qwen2: q/k/v biases, rotary base 1e6; its sliding_window is unused
 * (use_sliding_window false). */
START_TEST(test_qwen2_fields)
{
	struct model *m = load("Qwen_Qwen2-7B.json");

	ck_assert(m->qkv_bias && !m->bias);
	ck_assert(m->rope_theta == 1e6);
	ck_assert(m->norm_eps == 1e-6);
	ck_assert_int_eq(m->sliding_window, 0);
	/* Block 233057792 with the biases (configs[] above). */
	ck_assert_rel(m->layer[1].params, 233057792.0, 1e-15);
	model_free(m);
}
END_TEST

/* Gemma 2: a window of 4096 on blocks 0, 2, ..., 40, full attention on
 * 1, 3, ..., 41, at seq 8192 (min(max_position_embeddings 8192, 8192)).
 * Matmul FLOPs 2*(44040192 + 154140672) = 396361728 a block. Full
 * attention 4*s*a*d = 4*8192*16*256 = 134217728; windowed, keys =
 * w*(2s - w + 1)/(s + 1) = 4096*12289/8193 (the average of min(4096, p)
 * over p = 1..8192 is (4096*4097/2 + 4096*4096)/8192 = 3072.25, against
 * 8193/2 for full causal attention: 6143.75 of 8192 keys), so
 * 4*16*256*4096*12289/8193. Activations 18h + 4f + 2 more norms' inputs
 * 2*2h = 22*3584 + 4*14336 = 78848 + 57344 = 136192. */
START_TEST(test_gemma2_window)
{
	struct model *m = load("google_gemma-2-9b.json");
	double win = 16384.0 * 4096 * 12289 / 8193;

	ck_assert_int_eq(m->seq, 8192);
	ck_assert_int_eq(m->sliding_window, 4096);
	ck_assert_int_eq(m->sliding_every, 2);
	ck_assert(m->tied);
	ck_assert_int_eq(m->ffn_kind, FFN_SWIGLU);
	for (int i = 0; i < m->layers; i++)
		ck_assert(model_block_windowed(m, i) == (i % 2 == 0));
	ck_assert_rel(m->layer[1].flops_per_token, 396361728.0 + win, 1e-14);
	ck_assert_rel(m->layer[2].flops_per_token, 396361728.0 + 134217728.0, 1e-15);
	ck_assert_rel(m->layer[41].flops_per_token, 396361728.0 + win, 1e-14);
	ck_assert_rel(m->layer[42].flops_per_token, 396361728.0 + 134217728.0, 1e-15);
	ck_assert_rel(m->layer[1].act_bytes_per_token, 136192.0, 1e-15);
	/* At seq 4096 the window covers every key: all blocks alike,
	 * 396361728 + 4*4096*16*256 = 396361728 + 67108864. */
	ck_assert_int_eq(model_set_seq(m, 4096, &(struct err){ "" }), 0);
	ck_assert_rel(m->layer[1].flops_per_token, 463470592.0, 1e-14);
	ck_assert_rel(m->layer[2].flops_per_token, 463470592.0, 1e-15);
	model_free(m);
}
END_TEST

/* Gemma 3 1B's dimensions (gemma3-1b.json) with its layout given as
 * "sliding_window_pattern": P (types false) or as "layer_types" with full
 * attention where (i + 1) % P == 0, loaded at seq 8192 (caller frees). */
static struct model *gemma3_with(int P, bool types)
{
	char path[] = "/tmp/check_hf-g3-XXXXXX";
	int fd = mkstemp(path);
	struct model *m = NULL;
	struct err e = { "" };
	FILE *f;

	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	fputs("{\"model_type\": \"gemma3_text\", \"hidden_size\": 1152, "
	      "\"intermediate_size\": 6912, \"num_attention_heads\": 4, "
	      "\"num_key_value_heads\": 1, \"head_dim\": 256, "
	      "\"num_hidden_layers\": 26, \"vocab_size\": 262144, "
	      "\"max_position_embeddings\": 32768, \"sliding_window\": 512",
	      f);
	if (types) {
		fputs(", \"layer_types\": [", f);
		for (int i = 0; i < 26; i++)
			fprintf(f, "%s\"%s_attention\"", i ? ", " : "",
				(i + 1) % P ? "sliding" : "full");
		fputs("]}", f);
	} else {
		fprintf(f, ", \"sliding_window_pattern\": %d}", P);
	}
	fclose(f);
	ck_assert_msg(model_load(&m, path, &e) == 0, "%s", e.msg);
	ck_assert_int_eq(model_set_seq(m, 8192, &e), 0);
	remove(path);
	return m;
}

/* Gemma 3 1B at seq 8192: a window of 512 on all blocks but 5, 11, 17, 23
 * ((i + 1) % 6 == 0: full attention). Matmul FLOPs 2*(2949120 + 23887872)
 * = 53673984 a block; full attention 4*8192*4*256 = 33554432; windowed
 * 4*4*256 * 512*(2*8192 - 512 + 1)/8193 = 4096*512*15873/8193.
 * Activations 18h + 4f + 2*2h (two more norms) + 2*(a + g)*d (q/k norm
 * inputs) = 22*1152 + 4*6912 + 2*5*256 = 25344 + 27648 + 2560 = 55552. The
 * same layout given as "layer_types" loads the same. */
START_TEST(test_gemma3_window)
{
	struct model *m = load("gemma3-1b.json"), *n;
	double win = 4096.0 * 512 * 15873 / 8193;

	ck_assert_int_eq(m->sliding_window, 512);
	ck_assert_int_eq(m->sliding_every, 6);
	ck_assert(m->qk_norm && m->tied);
	ck_assert_int_eq(m->qk_norm_params, 512);
	ck_assert_int_eq(m->block_norms, 4);
	for (int i = 0; i < m->layers; i++) {
		bool full = i == 5 || i == 11 || i == 17 || i == 23;

		ck_assert(model_block_windowed(m, i) == !full);
		ck_assert_rel(m->layer[i + 1].flops_per_token,
			      53673984.0 + (full ? 33554432.0 : win), 1e-14);
		ck_assert_rel(m->layer[i + 1].act_bytes_per_token, 55552.0, 1e-15);
	}
	n = gemma3_with(6, true);
	ck_assert_int_eq(n->sliding_every, 6);
	for (int l = 0; l < m->n_layer; l++)
		ck_assert(n->layer[l].flops_per_token == m->layer[l].flops_per_token);
	model_free(n);
	model_free(m);
}
END_TEST

/* Gemma 3 with full attention everywhere, said either way: a
 * sliding_window_pattern of 1 (HF: is_sliding = (i + 1) % 1, never) or
 * "layer_types" all "full_attention". Every block then costs the full
 * attention of test_gemma3_window, 53673984 + 33554432 FLOPs a token. */
START_TEST(test_gemma3_all_full)
{
	for (int way = 0; way < 2; way++) {
		struct model *m = gemma3_with(1, way == 1);

		for (int i = 0; i < m->layers; i++) {
			ck_assert(!model_block_windowed(m, i));
			ck_assert_rel(m->layer[i + 1].flops_per_token, 53673984.0 + 33554432.0, 1e-14);
		}
		model_free(m);
	}
}
END_TEST

/* DeepSeek-R1 at seq 8192: MLA, 3 dense blocks, then 58 MoE blocks with a
 * shared expert (params in configs[]). Matmul weights of MLA: 187107328 -
 * 2048 norm weights = 187105280. Dense block: 2*(187105280 + 396361728) =
 * 1166934016; MoE block: 2*(187105280 + 8*44040192 + 256*7168 + 44040192)
 * = 2*(187105280 + 352321536 + 1835008 + 44040192) = 1170604032;
 * attention core 2*s*a*(d_q + d_v) = 2*8192*128*(192 + 128) = 671088640.
 * Activations: 18h + 4f = 129024 + 4*18432 (dense f; MoE 8*2048 + 2048 is
 * 18432 too) = 202752, MLA + 4*128*(192 + 128) - 8*7168 + 4*1536 + 4*512 +
 * 2*64 = 163840 - 57344 + 6144 + 2048 + 128 = 114816: 317568. */
START_TEST(test_deepseek_mla)
{
	struct model *m = load("deepseek-ai_DeepSeek-R1.json");

	ck_assert_int_eq(m->q_lora_rank, 1536);
	ck_assert_int_eq(m->kv_lora_rank, 512);
	ck_assert_int_eq(m->qk_nope_dim, 128);
	ck_assert_int_eq(m->qk_rope_dim, 64);
	ck_assert_int_eq(m->v_head_dim, 128);
	ck_assert_int_eq(m->head_dim, 192);
	ck_assert_int_eq(m->kv_heads, 128);
	ck_assert_int_eq(m->experts, 256);
	ck_assert_int_eq(m->top_k, 8);
	ck_assert_int_eq(m->moe_ffn, 2048);
	ck_assert_int_eq(m->shared_experts, 1);
	ck_assert_int_eq(m->shared_ffn, 2048);
	ck_assert_int_eq(m->dense_layers, 3);
	ck_assert_int_eq(m->ffn, 18432);
	ck_assert_str_eq(m->rope_scaling.type, "yarn");
	ck_assert(m->rope_scaling.factor == 40);
	ck_assert_int_eq(m->rope_scaling.original_max_pos, 4096);
	for (int l = 1; l <= 3; l++) {
		ck_assert(!model_block_moe(m, l - 1));
		ck_assert_rel(m->layer[l].params, 583483392.0, 1e-15);
		ck_assert(m->layer[l].expert_params == 0);
		ck_assert_rel(m->layer[l].flops_per_token, 1166934016.0 + 671088640.0, 1e-15);
	}
	for (int l = 4; l <= 61; l++) {
		ck_assert(model_block_moe(m, l - 1));
		ck_assert_rel(m->layer[l].params, 11507286272.0, 1e-15);
		ck_assert_rel(m->layer[l].expert_params, 11274289152.0, 1e-15);
		ck_assert_rel(m->layer[l].flops_per_token, 1170604032.0 + 671088640.0, 1e-15);
	}
	ck_assert_rel(m->layer[1].act_bytes_per_token, 317568.0, 1e-15);
	ck_assert_rel(m->layer[4].act_bytes_per_token, 317568.0, 1e-15);
	model_free(m);
}
END_TEST

/* DeepSeek-V2-Lite edited: without shared experts (n_shared_experts 0) an
 * MoE block loses its 2 shared SwiGLU experts of 1408, 2 x 3 x 2048 x 1408
 * = 17301504 parameters, and keeps no shared FFN; MLA's K and V are per
 * head, so num_key_value_heads (1 here) does not change the KV heads. */
START_TEST(test_deepseek_edits)
{
	struct model *m = load("deepseek-ai_DeepSeek-V2-Lite.json"), *n;

	ck_assert_int_eq(m->shared_experts, 2);
	ck_assert(model_block_moe(m, 1));
	n = load_edited("deepseek-ai_DeepSeek-V2-Lite.json", "n_shared_experts", 0);
	ck_assert_int_eq(n->shared_experts, 0);
	ck_assert_int_eq(n->shared_ffn, 0);
	ck_assert_rel(m->layer[2].params - n->layer[2].params, 17301504.0, 1e-15);
	model_free(n);
	n = load_edited("deepseek-ai_DeepSeek-V2-Lite.json", "num_key_value_heads", 1);
	ck_assert_int_eq(n->kv_heads, 16);
	ck_assert_rel(n->layer[2].params, m->layer[2].params, 0);
	model_free(n);
	model_free(m);
}
END_TEST

/* Qwen1.5-MoE: a shared expert of 5632 on every block. Matmul FLOPs at
 * seq 8192: 2*(16777216 + 4*3*2048*1408 + 2048*60 + 3*2048*5632) =
 * 2*(16777216 + 34603008 + 122880 + 34603008) = 172212224, + 4*8192*16*128
 * = 67108864. Activations 18*2048 + 4*(4*1408 + 5632) = 36864 + 45056. */
START_TEST(test_qwen2_moe_shared)
{
	struct model *m = load("Qwen_Qwen1.5-MoE-A2.7B.json");

	ck_assert(m->qkv_bias);
	ck_assert_int_eq(m->experts, 60);
	ck_assert_int_eq(m->top_k, 4);
	ck_assert_int_eq(m->moe_ffn, 1408);
	ck_assert_int_eq(m->shared_experts, 1);
	ck_assert_int_eq(m->shared_ffn, 5632);
	ck_assert_int_eq(m->moe_every, 1);
	ck_assert_rel(m->layer[1].flops_per_token, 172212224.0 + 67108864.0, 1e-15);
	ck_assert_rel(m->layer[1].act_bytes_per_token, 81920.0, 1e-15);
	model_free(m);
}
END_TEST

/* Llama 4 Scout: one routed expert of 16 and a shared one, both of 8192,
 * on every block; dense blocks would have intermediate_size_mlp 16384;
 * q/k L2 norms without weights. */
START_TEST(test_llama4_fields)
{
	struct model *m = load("meta-llama_Llama-4-Scout-17B-16E-text.ASSEMBLED.json");

	ck_assert_int_eq(m->experts, 16);
	ck_assert_int_eq(m->top_k, 1);
	ck_assert_int_eq(m->moe_ffn, 8192);
	ck_assert_int_eq(m->shared_experts, 1);
	ck_assert_int_eq(m->shared_ffn, 8192);
	ck_assert_int_eq(m->ffn, 16384);
	ck_assert_int_eq(m->moe_every, 1);
	ck_assert(m->qk_norm);
	ck_assert_int_eq(m->qk_norm_params, 0);
	for (int i = 0; i < m->layers; i++)
		ck_assert(model_block_moe(m, i));
	model_free(m);
}
END_TEST

/* Qwen3 and OLMo 2: q/k norms, per head (2*128 = 256) and over all heads
 * ((32 + 32)*128 = 8192). */
START_TEST(test_qk_norms)
{
	struct model *m = load("Qwen_Qwen3-8B.json");

	ck_assert(m->qk_norm);
	ck_assert_int_eq(m->qk_norm_params, 256);
	model_free(m);
	m = load("allenai_OLMo-2-7B.json");
	ck_assert(m->qk_norm);
	ck_assert_int_eq(m->qk_norm_params, 8192);
	ck_assert_int_eq(m->dtype_bytes, 4); /* torch_dtype float32 */
	model_free(m);
	/* with 8 KV heads OLMo 2's k norm spans them only: (32 + 8)*128 */
	m = load_edited("allenai_OLMo-2-7B.json", "num_key_value_heads", 8);
	ck_assert_int_eq(m->qk_norm_params, 5120);
	model_free(m);
}
END_TEST

/* Falcon-7B: multi-query (one KV head), one LayerNorm before the parallel
 * attention and MLP, tied. Activations 18h + 4f - 2h (one norm fewer) - 2h
 * (the MLP reads the attention's input) = 14*4544 + 4*18176 = 63616 +
 * 72704 = 136320. */
START_TEST(test_falcon_fields)
{
	struct model *m = load("tiiuae_falcon-7b-instruct.json");

	ck_assert_int_eq(m->kv_heads, 1);
	ck_assert_int_eq(m->head_dim, 64);
	ck_assert_int_eq(m->ffn, 18176);
	ck_assert_int_eq(m->ffn_kind, FFN_GELU);
	ck_assert_int_eq(m->norm, NORM_LAYER);
	ck_assert(m->parallel_block && m->tied && !m->bias);
	ck_assert_int_eq(m->block_norms, 1);
	ck_assert_int_eq(m->max_pos, 2048); /* FalconConfig's default */
	ck_assert_rel(m->layer[1].act_bytes_per_token, 136320.0, 1e-15);
	model_free(m);
}
END_TEST

/* GPT-J: RoPE on 64 of 256 dims, biases on the MLP and the LM head. */
START_TEST(test_gptj_fields)
{
	struct model *m = load("EleutherAI_gpt-j-6b.json");

	ck_assert_int_eq(m->rotary_dim, 64);
	ck_assert_int_eq(m->head_dim, 256);
	ck_assert(m->parallel_block && m->mlp_bias && m->head_bias && !m->bias);
	ck_assert(!m->tied && !m->learned_pos);
	/* LM head 50400*4096 + 50400, ln_f 2*4096. */
	ck_assert_rel(m->layer[29].params, 206438400.0 + 50400 + 8192, 1e-15);
	model_free(m);
}
END_TEST

/* Phi-3 with partial_rotary_factor 0.75 (Phi-4-mini's): RoPE on
 * int(96 * 0.75) = 72 of the 96 dims of a head (3072 / 32). */
START_TEST(test_phi3_partial_rotary)
{
	char path[] = "/tmp/check_hf-phi-XXXXXX";
	int fd = mkstemp(path);
	FILE *f;
	struct model *m = NULL;
	struct err e = { "" };

	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	fputs("{\"model_type\": \"phi3\", \"hidden_size\": 3072, "
	      "\"intermediate_size\": 8192, \"num_attention_heads\": 32, "
	      "\"num_hidden_layers\": 2, \"vocab_size\": 1000, "
	      "\"max_position_embeddings\": 4096, "
	      "\"partial_rotary_factor\": 0.75}",
	      f);
	fclose(f);
	ck_assert_msg(model_load(&m, path, &e) == 0, "%s", e.msg);
	ck_assert_int_eq(m->head_dim, 96);
	ck_assert_int_eq(m->rotary_dim, 72);
	model_free(m);
	remove(path);
}
END_TEST

/* model_profile_json -> file -> model_load keeps the layers and every field
 * the compute model and the launch files read. */
START_TEST(test_round_trip)
{
	struct model *m = load(configs[_i].file), *b = NULL;
	char *json = model_profile_json(m), path[] = "/tmp/check_hf-XXXXXX";
	int fd = mkstemp(path);
	struct err e = { "" };
	FILE *f;

	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	fputs(json, f);
	fclose(f);
	ck_assert_msg(model_load(&b, path, &e) == 0, "%s", e.msg);
	ck_assert_str_eq(b->model_type, m->model_type);
	ck_assert_int_eq(b->norm, m->norm);
	ck_assert(b->norm_eps == m->norm_eps);
	ck_assert(b->rope_theta == m->rope_theta);
	ck_assert_str_eq(b->rope_scaling.type, m->rope_scaling.type);
	ck_assert(b->rope_scaling.factor == m->rope_scaling.factor);
	ck_assert_int_eq(b->rope_scaling.original_max_pos, m->rope_scaling.original_max_pos);
	ck_assert_int_eq(b->rotary_dim, m->rotary_dim);
	ck_assert_int_eq(b->qkv_bias, m->qkv_bias);
	ck_assert_int_eq(b->qk_norm, m->qk_norm);
	ck_assert_int_eq(b->sliding_window, m->sliding_window);
	ck_assert_int_eq(b->sliding_every, m->sliding_every);
	ck_assert_int_eq(b->experts, m->experts);
	ck_assert_int_eq(b->top_k, m->top_k);
	ck_assert_int_eq(b->moe_ffn, m->moe_ffn);
	ck_assert_int_eq(b->shared_experts, m->shared_experts);
	ck_assert_int_eq(b->shared_ffn, m->shared_ffn);
	ck_assert_int_eq(b->dense_layers, m->dense_layers);
	ck_assert_int_eq(b->moe_every > 1, m->moe_every > 1);
	ck_assert_int_eq(b->q_lora_rank, m->q_lora_rank);
	ck_assert_int_eq(b->kv_lora_rank, m->kv_lora_rank);
	ck_assert_int_eq(b->qk_rope_dim, m->qk_rope_dim);
	ck_assert_int_eq(b->qk_nope_dim, m->qk_nope_dim);
	ck_assert_int_eq(b->v_head_dim, m->v_head_dim);
	ck_assert_int_eq(b->head_dim, m->head_dim);
	ck_assert_int_eq(b->block_norms, m->block_norms);
	ck_assert_int_eq(b->parallel_block, m->parallel_block);
	ck_assert_int_eq(b->mlp_bias, m->mlp_bias);
	ck_assert_int_eq(b->head_bias, m->head_bias);
	ck_assert_int_eq(b->n_layer, m->n_layer);
	for (int l = 0; l < m->n_layer; l++) {
		ck_assert(b->layer[l].params == m->layer[l].params);
		ck_assert(b->layer[l].expert_params == m->layer[l].expert_params);
		ck_assert(b->layer[l].flops_per_token == m->layer[l].flops_per_token);
		ck_assert(b->layer[l].act_bytes_per_token == m->layer[l].act_bytes_per_token);
		ck_assert(model_attn_flops(b, l, 3000) == model_attn_flops(m, l, 3000));
	}
	ck_assert(model_params(b) == model_params(m));
	model_free(b);
	model_free(m);
	remove(path);
	free(json);
}
END_TEST

/* A plan from a profile written by `ampplan profile` equals the plan from
 * the config (CSV byte for byte, every strategy at PP 2 and CP 1): Gemma 2 (windows), Qwen1.5-MoE (shared
 * experts), GPT-J (parallel block, partial rotary). */
START_TEST(test_profile_plans_same)
{
	static const char *const files[] = {
		"google_gemma-2-9b.json", "Qwen_Qwen1.5-MoE-A2.7B.json",
		"EleutherAI_gpt-j-6b.json"
	};
	char prof[] = "/tmp/check_hf-prof-XXXXXX", args[512];
	char *out = NULL, *a, *b;
	int fd = mkstemp(prof);
	FILE *f;

	ck_assert_int_ge(fd, 0);
	close(fd);
	snprintf(args, sizeof args, "profile --model " DIR "%s", files[_i]);
	ck_assert_int_eq(run_ampplan(args, &out, NULL), 0);
	f = fopen(prof, "w");
	fputs(out, f);
	fclose(f);
	free(out);
	snprintf(args, sizeof args, "--model " DIR "%s --cluster clusters/dgx-h100.json "
				    "--top 5 --pp 2 --cp 1 --csv -",
		 files[_i]);
	ck_assert_int_eq(run_ampplan(args, &a, NULL), 0);
	snprintf(args, sizeof args, "--model %s --cluster clusters/dgx-h100.json "
				    "--top 5 --pp 2 --cp 1 --csv -",
		 prof);
	ck_assert_int_eq(run_ampplan(args, &b, NULL), 0);
	ck_assert_msg(strcmp(a, b) == 0, "the plans of %s and of its profile differ",
		      files[_i]);
	free(a);
	free(b);
	remove(prof);
}
END_TEST

/* The parameters one token runs through (model_active_params), and the
 * summary line and CSV that print them. Mixtral-8x7B: 46702792704 in all
 * (test_params), of which 32 blocks of 8 experts 8*3*4096*14336 =
 * 1409286144 each, a token running 2 of 8: 32 * 1409286144 * 6/8 =
 * 33822867456 idle, 12879925248 active (published 12.9B). DeepSeek-V2-Lite:
 * 26 MoE blocks of 64 experts 553648128, 6 of 64 run: 26 * 553648128 *
 * 58/64 = 13045334016 idle of 15706484224, 2661150208 active (DeepSeek
 * publishes 2.4B). A dense model: all of them. */
START_TEST(test_active_params)
{
	struct model *m = load("mistralai_Mixtral-8x7B-v0.1.json");
	char *out, *err;

	ck_assert_double_eq(model_active_params(m), 12879925248.0);
	model_free(m);
	m = load("deepseek-ai_DeepSeek-V2-Lite.json");
	ck_assert_double_eq(model_active_params(m), 2661150208.0);
	model_free(m);
	m = load("meta-llama_Llama-3.1-8B.json");
	ck_assert_double_eq(model_active_params(m), model_params(m));
	model_free(m);
	ck_assert_int_eq(run_ampplan("--model " DIR "mistralai_Mixtral-8x7B-v0.1.json --cluster "
				     "clusters/dgx-h100.json --tp 2 --pp 2 --dp 32 --cp 1 --top 1 --csv -",
				     &out, &err),
			 0);
	ck_assert_ptr_nonnull(strstr(err, "mistralai_Mixtral-8x7B-v0.1 (46.7B parameters, 12.9B active) on "));
	/* then mfu_peak, the per-trainer times (issue 30) and groups_idle */
	ck_assert_ptr_nonnull(strstr(out, ",params_total,params_active,mfu_peak,megatron_iteration_s,"));
	ck_assert_ptr_nonnull(strstr(out, ",46702792704,12879925248,bf16,"));
	/* then cost model v3's columns (issue 24) */
	ck_assert_ptr_nonnull(strstr(out, ",groups_idle,optim_dtype,ep_overlap,moe_grouped_gemm,recompute_modules,moe_pad_capacity,moe_dispatcher,deferred_wgrad_micro_batches,recompute_by_module,"
				     "offload_modules,offload_copy_s,offload_copy_hidden_s,offloaded_GiB,tied_allreduce_s\n"));
	ck_assert_ptr_nonnull(strstr(out, ",fp32,0,0,,,alltoall,0,"));
	free(out);
	free(err);
}
END_TEST

/* Another model_type is refused naming it and every supported type. */
START_TEST(test_refusal)
{
	char *err = NULL;

	ck_assert_int_eq(run_ampplan("profile --model tests/data/bad/model-hf-type.json",
				     NULL, &err),
			 1);
	ck_assert_ptr_nonnull(strstr(err, "tests/data/bad/model-hf-type.json: "
					  "field 'model_type' is 'bert', which is not supported "
					  "(supported: llama, mistral, mixtral, qwen2, qwen2_moe, "
					  "qwen3, qwen3_moe, gemma2, gemma3_text, phi3, deepseek_v2, deepseek_v3, "
					  "llama4_text, olmo2, falcon, gptj, gpt2)"));
	free(err);
}
END_TEST

static Suite *hf_suite(void)
{
	Suite *s = suite_create("hf");
	TCase *tc = tcase_create("hf");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_config_params, 0, N_CONFIGS);
	tcase_add_test(tc, test_all_reference_configs);
	tcase_add_test(tc, test_llama31_fields);
	tcase_add_test(tc, test_qwen2_fields);
	tcase_add_test(tc, test_gemma2_window);
	tcase_add_test(tc, test_gemma3_window);
	tcase_add_test(tc, test_gemma3_all_full);
	tcase_add_test(tc, test_deepseek_mla);
	tcase_add_test(tc, test_deepseek_edits);
	tcase_add_test(tc, test_qwen2_moe_shared);
	tcase_add_test(tc, test_llama4_fields);
	tcase_add_test(tc, test_qk_norms);
	tcase_add_test(tc, test_falcon_fields);
	tcase_add_test(tc, test_gptj_fields);
	tcase_add_test(tc, test_phi3_partial_rotary);
	tcase_add_loop_test(tc, test_round_trip, 0, N_CONFIGS);
	tcase_add_loop_test(tc, test_profile_plans_same, 0, 3);
	tcase_add_test(tc, test_refusal);
	tcase_add_test(tc, test_active_params);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(hf_suite());
}
