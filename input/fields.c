/* fields.c: the field readers shared by the profile reader and the Hugging
 * Face reader (fields.h). */
#include "fields.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "model.h"
#include "util.h"

int fields_pick(const char *key, const char *val, const char *const names[],
		int n, int *out, struct err *e)
{
	char list[128] = "";
	size_t len = 0;

	for (int i = 0; i < n; i++) {
		if (strcmp(val, names[i]) == 0) {
			*out = i;
			return 0;
		}
		if (len < sizeof list)
			len += (size_t)snprintf(list + len, sizeof list - len,
						"%s'%s'", i == 0 ? "" : i == n - 1 ? " or "
										   : ", ",
						names[i]);
	}
	return err_set(e, "field '%s' must be %s, not '%s'", key, list, val);
}

int fields_opt_int(const cJSON *obj, const char *where, const char *key,
		   bool required, long min, long max, int *out, struct err *e)
{
	if (!key)
		return 0;
	if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(obj, key)))
		return required ? err_set(e, "missing field '%s'", key) : 0;
	return json_int(obj, where, key, required, min, max, out, e);
}

int fields_read_dims(struct model *m, const cJSON *doc, const struct keys *k,
		     struct err *e)
{
	m->kv_heads = m->head_dim = m->ffn = m->max_pos = 0;
	if (json_int(doc, "", k->hidden, true, 1, MAX_HIDDEN, &m->hidden, e) ||
	    json_int(doc, "", k->layers, true, 1, MAX_LAYERS, &m->layers, e) ||
	    json_int(doc, "", k->heads, true, 1, MAX_HEADS, &m->heads, e) ||
	    fields_opt_int(doc, "", k->kv_heads, false, 1, MAX_HEADS, &m->kv_heads, e) ||
	    fields_opt_int(doc, "", k->head_dim, false, 1, MAX_HEAD_DIM, &m->head_dim, e) ||
	    fields_opt_int(doc, "", k->ffn, k->ffn_required, 1, MAX_FFN, &m->ffn, e) ||
	    json_int(doc, "", k->vocab, true, 1, MAX_VOCAB, &m->vocab, e) ||
	    fields_opt_int(doc, "", k->max_pos, k->max_pos_required, 1, MAX_POS,
			   &m->max_pos, e))
		return -1;
	if (!m->kv_heads)
		m->kv_heads = m->heads;
	if (!m->ffn)
		m->ffn = 4 * m->hidden;
	if (!m->head_dim && m->hidden % m->heads)
		return err_set(e, "field '%s' must divide '%s'", k->heads, k->hidden);
	if (!m->head_dim && m->hidden / m->heads > MAX_HEAD_DIM)
		return err_set(e, "field '%s' over '%s' must be a head dimension of at most %d, not %d",
			       k->hidden, k->heads, MAX_HEAD_DIM, m->hidden / m->heads);
	if (!m->head_dim)
		m->head_dim = m->hidden / m->heads;
	if (m->heads % m->kv_heads)
		return err_set(e, "field '%s' must divide '%s'", k->kv_heads, k->heads);
	if ((long)m->heads * m->head_dim > MAX_QDIM)
		return err_set(e, "field '%s' times '%s' must be at most %d",
			       k->heads, k->head_dim ? k->head_dim : "head dim",
			       MAX_QDIM);
	return 0;
}

int fields_check_rope(const struct model *m, const char *type_key, struct err *e)
{
	static const char *const types[] = { FIELDS_ROPE_TYPES };
	const struct rope_scaling *r = &m->rope_scaling;
	char key[40];
	int t;

	if (!r->type[0])
		return 0;
	snprintf(key, sizeof key, "rope_scaling.%s", type_key);
	if (fields_pick(key, r->type, types, (int)(sizeof types / sizeof *types), &t, e))
		return -1;
	if ((r->factor != 0 || strcmp(r->type, "longrope") != 0) &&
	    strcmp(r->type, "default") != 0 && strcmp(r->type, "mrope") != 0 &&
	    r->factor < 1)
		return err_set(e, "field 'rope_scaling.factor' must be at least 1 for "
				  "rope type '%s', not %g",
			       r->type, r->factor);
	if (strcmp(r->type, "llama3") != 0)
		return 0;
	if (r->low_freq_factor <= 0 || r->high_freq_factor <= 0)
		return err_set(e, "field 'rope_scaling.%s' must be above 0 for rope "
				  "type 'llama3', not %g",
			       r->low_freq_factor <= 0 ? "low_freq_factor" : "high_freq_factor",
			       r->low_freq_factor <= 0 ? r->low_freq_factor : r->high_freq_factor);
	if (r->low_freq_factor > r->high_freq_factor)
		return err_set(e, "field 'rope_scaling.low_freq_factor' (%g) must be at "
				  "most 'rope_scaling.high_freq_factor' (%g)",
			       r->low_freq_factor, r->high_freq_factor);
	if (r->original_max_pos <= 0)
		return err_set(e, "missing field 'rope_scaling.original_max_position_"
				  "embeddings' (rope type 'llama3' needs it)");
	return 0;
}
