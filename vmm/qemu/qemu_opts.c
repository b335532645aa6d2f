#include "vmm/qemu/qemu_opts.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int opts_add(struct qemu_opts *opts, char *key, char *value, char *err,
		    size_t errlen)
{
	if (!key || !value) {
		free(key);
		free(value);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (opts->nr == QEMU_OPTS_MAX) {
		snprintf(err, errlen, "more than %u parameters in one option", QEMU_OPTS_MAX);
		free(key);
		free(value);
		return -E2BIG;
	}
	opts->o[opts->nr++] = (struct qemu_opt){ key, value };
	return 0;
}

/*
 * Copy one token from *p up to an unescaped `stop` (or ',' / end), turning
 * ",," into ','. Leaves *p on the terminator.
 */
static char *opts_token(const char **p, char stop)
{
	const char *s = *p;
	size_t n = 0;
	char *out = malloc(strlen(s) + 1);

	if (!out)
		return NULL;
	while (*s) {
		if (*s == ',' && s[1] == ',') {
			out[n++] = ',';
			s += 2;
			continue;
		}
		if (*s == ',' || *s == stop)
			break;
		out[n++] = *s++;
	}
	out[n] = '\0';
	*p = s;
	return out;
}

static int opts_parse_kv(struct qemu_opts *opts, const char *s, const char *implied,
			 char *err, size_t errlen)
{
	const char *p = s;
	bool first = true;
	int r;

	while (*p) {
		char *key = opts_token(&p, '=');
		char *value;

		if (!key)
			return opts_add(opts, NULL, NULL, err, errlen);
		if (*p == '=') {
			p++;
			value = opts_token(&p, '\0');
		} else if (first && implied) {
			value = key;
			key = strdup(implied);
		} else {
			value = strdup("on");
		}
		if (key && !key[0]) {
			snprintf(err, errlen, "'%s': empty parameter name", s);
			free(key);
			free(value);
			return -EINVAL;
		}
		r = opts_add(opts, key, value, err, errlen);
		if (r)
			return r;
		first = false;
		if (*p == ',')
			p++;
	}
	return 0;
}

static char *json_value_string(struct json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_string:
		return strdup(json_object_get_string(v));
	case json_type_boolean:
		return strdup(json_object_get_boolean(v) ? "on" : "off");
	default:
		return strdup(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
	}
}

static int opts_parse_json(struct qemu_opts *opts, const char *s, char *err,
			   size_t errlen)
{
	enum json_tokener_error jerr;
	struct json_object *obj = json_tokener_parse_verbose(s, &jerr);
	int r = 0;

	if (!obj || !json_object_is_type(obj, json_type_object)) {
		snprintf(err, errlen, "'%s': %s", s,
			 obj ? "not a JSON object" : json_tokener_error_desc(jerr));
		json_object_put(obj);
		return -EINVAL;
	}
	json_object_object_foreach(obj, key, val) {
		r = opts_add(opts, strdup(key), json_value_string(val), err, errlen);
		if (r)
			break;
	}
	json_object_put(obj);
	return r;
}

int qemu_opts_parse(struct qemu_opts *opts, const char *s, const char *implied,
		    char *err, size_t errlen)
{
	memset(opts, 0, sizeof(*opts));
	if (s[0] == '{')
		return opts_parse_json(opts, s, err, errlen);
	return opts_parse_kv(opts, s, implied, err, errlen);
}

const char *qemu_opts_get(const struct qemu_opts *opts, const char *key)
{
	for (unsigned i = opts->nr; i-- > 0;)
		if (!strcmp(opts->o[i].key, key))
			return opts->o[i].value;
	return NULL;
}

int qemu_parse_bool(const char *v, bool *out)
{
	static const char *const yes[] = { "on", "yes", "true", "y" };
	static const char *const no[] = { "off", "no", "false", "n" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcmp(v, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcmp(v, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

int qemu_opts_get_bool(const struct qemu_opts *opts, const char *key, bool def,
		       bool *out)
{
	const char *v = qemu_opts_get(opts, key);

	*out = def;
	return v ? qemu_parse_bool(v, out) : 0;
}

int qemu_parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t n = 0;

	if (!*s)
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		uint64_t d = (uint64_t)(*p - '0');

		if (*p < '0' || *p > '9')
			return -EINVAL;
		if (d > max || n > (max - d) / 10)
			return -EINVAL;
		n = n * 10 + d;
	}
	*out = n;
	return 0;
}

int qemu_opts_get_uint(const struct qemu_opts *opts, const char *key,
		       uint64_t max, uint64_t *out)
{
	const char *v = qemu_opts_get(opts, key);

	return v ? qemu_parse_uint(v, max, out) : -ENOENT;
}

void qemu_opts_free(struct qemu_opts *opts)
{
	for (unsigned i = 0; i < opts->nr; i++) {
		free(opts->o[i].key);
		free(opts->o[i].value);
	}
	opts->nr = 0;
}
