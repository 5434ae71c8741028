/*
 * experiment.c - experiments: the JSON config (rlt_exp_config_parse, its
 * keys in docs/experiment.md), opening what it names (rlt_exp_open: ops,
 * datasets or the records database, every tuner created once on every
 * workload's space), and the runs (rlt_exp_run_all: rlt_tune per workload,
 * seed and tuner), with the best known GFLOP/s of each workload. What the
 * results look like in the report is results.c's; an experiment over
 * whole models is opened and run by models.c.
 *
 * The config is checked whole before anything runs, and strictly: an
 * unknown or repeated key, a key of the other measuring mode, a value of
 * the wrong type or range are errors that name the file and the key path,
 * because an experiment run with a silently ignored setting looks exactly
 * like a right one.
 */
#include "experiment/experiment.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_TRIALS 1000000
#define MAX_SEED_EXACT 9007199254740992.0 /* 2^53: every whole number up to it is exact in JSON */

/* ---- messages -------------------------------------------------------------- */

rlt_status rlt_exp_fail_at(rlt_diag *diag, rlt_status st, const char *path, const char *key, const char *fmt, ...)
{
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (key && *key) return rlt_fail(diag, st, "%s: %s: %s", path, key, msg);
    return rlt_fail(diag, st, "%s: %s", path, msg);
}


void rlt_exp_tuner_option_key(const rlt_exp_config *c, int t, const char *message, char *key, size_t cap)
{
    snprintf(key, cap, "tuners[%d]%s", t, strcmp(c->tuners[t].options_json, "{}") ? ".options" : "");
    /* the option the tuner refused, when its message names exactly one */
    cJSON *given = cJSON_Parse(c->tuners[t].options_json);
    const cJSON *item, *named = NULL;
    int n_named = 0;
    cJSON_ArrayForEach(item, given)
    {
        if (strstr(message, item->string)) {
            named = item;
            n_named++;
        }
    }
    if (n_named == 1) snprintf(key, cap, "tuners[%d].options.%.100s", t, named->string);
    cJSON_Delete(given);
}

/* What a JSON value is, for "got ..." in messages. */
static void describe(const cJSON *v, char *buf, size_t cap)
{
    if (cJSON_IsString(v))
        snprintf(buf, cap, "\"%.60s\"%s", v->valuestring, strlen(v->valuestring) > 60 ? "..." : "");
    else if (cJSON_IsNumber(v))
        snprintf(buf, cap, "%.17g", v->valuedouble);
    else if (cJSON_IsBool(v))
        snprintf(buf, cap, "%s", cJSON_IsTrue(v) ? "true" : "false");
    else if (cJSON_IsNull(v))
        snprintf(buf, cap, "null");
    else if (cJSON_IsArray(v))
        snprintf(buf, cap, "an array");
    else
        snprintf(buf, cap, "an object");
}

static void key_path(char *buf, size_t cap, const char *parent, const char *key)
{
    if (parent && *parent)
        snprintf(buf, cap, "%s.%s", parent, key);
    else
        snprintf(buf, cap, "%s", key);
}

/* ---- JSON shape checks ------------------------------------------------------ */

/* Every object in the tree has each key once: cJSON keeps both copies of
 * a repeated key and reads the first, so a second one would pass unseen. */
static rlt_status check_unique_keys(const char *path, const cJSON *v, const char *where, rlt_diag *diag)
{
    char sub[512];
    const cJSON *item;
    if (cJSON_IsObject(v)) {
        cJSON_ArrayForEach(item, v)
        {
            for (const cJSON *prev = v->child; prev != item; prev = prev->next)
                if (strcmp(prev->string, item->string) == 0) {
                    key_path(sub, sizeof sub, where, item->string);
                    return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, path, sub, "given twice (once is allowed)");
                }
            key_path(sub, sizeof sub, where, item->string);
            rlt_status st = check_unique_keys(path, item, sub, diag);
            if (st != RLT_STATUS_OK) return st;
        }
    } else if (cJSON_IsArray(v)) {
        int i = 0;
        cJSON_ArrayForEach(item, v)
        {
            snprintf(sub, sizeof sub, "%s[%d]", where, i++);
            rlt_status st = check_unique_keys(path, item, sub, diag);
            if (st != RLT_STATUS_OK) return st;
        }
    }
    return RLT_STATUS_OK;
}

/* Every key of `obj` is one of `known` (NULL-terminated). */
static rlt_status check_keys(const char *path, const cJSON *obj, const char *where, const char *const *known,
                             rlt_diag *diag)
{
    const cJSON *item;
    cJSON_ArrayForEach(item, obj)
    {
        bool is_known = false;
        for (int i = 0; known[i]; i++) is_known |= strcmp(known[i], item->string) == 0;
        if (is_known) continue;
        char list[512] = "", sub[512];
        size_t used = 0;
        for (int i = 0; known[i] && used + 1 < sizeof list; i++) {
            int n = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", known[i]);
            if (n < 0) break;
            used += (size_t)n;
        }
        key_path(sub, sizeof sub, where, item->string);
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, path, sub, "unknown key; valid keys: %s", list);
    }
    return RLT_STATUS_OK;
}

/* A whole number in [min, max] at obj[key]: *out unchanged when absent. */
static rlt_status get_int(const char *path, const cJSON *obj, const char *where, const char *key, int64_t min,
                          int64_t max, bool is_required, int64_t *out, rlt_diag *diag)
{
    char sub[512], got[128];
    key_path(sub, sizeof sub, where, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (!is_required) return RLT_STATUS_OK;
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, path, sub,
                       "missing: a whole number from %" PRId64 " to %" PRId64 " is required", min, max);
    }
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!isfinite(d) || d != floor(d) || d < (double)min || d > (double)max) {
        describe(v, got, sizeof got);
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, path, sub,
                       "expected a whole number from %" PRId64 " to %" PRId64 ", got %s", min, max, got);
    }
    *out = (int64_t)d;
    return RLT_STATUS_OK;
}

/* A number in (min, max] at obj[key]. */
static rlt_status get_positive(const char *path, const cJSON *obj, const char *key, double max, double *out,
                               rlt_diag *diag)
{
    char got[128];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) return RLT_STATUS_OK;
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!isfinite(d) || d <= 0 || d > max) {
        describe(v, got, sizeof got);
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, path, key, "expected a number above 0 and at most %g, got %s",
                       max, got);
    }
    *out = d;
    return RLT_STATUS_OK;
}

/* A non-empty string at obj[key] (*out: borrowed from the tree), NULL when
 * absent and not required. */
static rlt_status get_string(const char *path, const cJSON *obj, const char *where, const char *key,
                             bool is_required, const char *what, const char **out, rlt_diag *diag)
{
    char sub[512], got[128];
    key_path(sub, sizeof sub, where, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *out = NULL;
    if (!v) {
        if (!is_required) return RLT_STATUS_OK;
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, path, sub, "missing: %s is required", what);
    }
    if (!cJSON_IsString(v) || v->valuestring[0] == '\0') {
        describe(v, got, sizeof got);
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, path, sub, "expected %s (a non-empty string), got %s", what,
                       got);
    }
    *out = v->valuestring;
    return RLT_STATUS_OK;
}

/* ---- the config -------------------------------------------------------------- */

static char *dup_or_fail(const char *s, bool *has_failed)
{
    if (!s) return NULL;
    char *d = rlt_strdup(s);
    if (!d) *has_failed = true;
    return d;
}

/* `rel` relative to the directory of the config file `path`. */
static char *resolve_path(const char *path, const char *rel)
{
    const char *slash = strrchr(path, '/');
    if (rel[0] == '/' || !slash) return rlt_strdup(rel);
    rlt_str s;
    rlt_str_init(&s);
    rlt_str_appendn(&s, path, (size_t)(slash - path) + 1);
    rlt_str_append(&s, rel);
    return rlt_str_take(&s);
}

static bool is_name_char(int ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
           ch == '_' || ch == '-';
}

static rlt_status parse_seeds(rlt_exp_config *c, const cJSON *root, rlt_diag *diag)
{
    char got[128], sub[64];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "seeds");
    if (!v)
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, "seeds",
                       "missing: a count (seeds 0 .. N-1) or a list of seeds is required");
    if (cJSON_IsNumber(v)) {
        int64_t n = 0;
        rlt_status st = get_int(c->path, root, "", "seeds", 1, RLT_EXP_MAX_SEEDS, true, &n, diag);
        if (st != RLT_STATUS_OK) return st;
        c->n_seeds = (int)n;
        c->seeds = rlt_calloc((size_t)n, sizeof *c->seeds);
        if (!c->seeds) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading %s", c->path);
        for (int i = 0; i < c->n_seeds; i++) c->seeds[i] = (uint64_t)i;
        return RLT_STATUS_OK;
    }
    int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 0;
    if (!cJSON_IsArray(v) || n < 1 || n > RLT_EXP_MAX_SEEDS) {
        describe(v, got, sizeof got);
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, "seeds",
                       "expected a count from 1 to %d or a list of 1 to %d seeds, got %s%s", RLT_EXP_MAX_SEEDS,
                       RLT_EXP_MAX_SEEDS, got, cJSON_IsArray(v) ? (n ? " too long" : " (empty)") : "");
    }
    c->n_seeds = n;
    c->seeds = rlt_calloc((size_t)n, sizeof *c->seeds);
    if (!c->seeds) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading %s", c->path);
    for (int i = 0; i < n; i++) {
        const cJSON *s = cJSON_GetArrayItem(v, i);
        snprintf(sub, sizeof sub, "seeds[%d]", i);
        double d = cJSON_IsNumber(s) ? s->valuedouble : NAN;
        if (!isfinite(d) || d != floor(d) || d < 0 || d > MAX_SEED_EXACT) {
            describe(s, got, sizeof got);
            return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, sub,
                           "expected a whole number from 0 to 2^53, got %s", got);
        }
        c->seeds[i] = (uint64_t)d;
        for (int j = 0; j < i; j++)
            if (c->seeds[j] == c->seeds[i])
                return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, sub,
                               "seed %" PRIu64 " is already seeds[%d]: a repeated seed repeats a run", c->seeds[i],
                               j);
    }
    return RLT_STATUS_OK;
}

/* A model workload: {"model": FILE, "label": NAME}. */
static rlt_status parse_model_workload(rlt_exp_config *c, const cJSON *item, int i, const char *model,
                                       const char *label, rlt_diag *diag)
{
    static const char *const op_keys[] = {"op", "expr", "shape", "dataset"};
    char where[64], sub[96];
    snprintf(where, sizeof where, "workloads[%d]", i);
    rlt_exp_workload *w = &c->workloads[i];
    for (size_t k = 0; k < RLT_ARRAY_LEN(op_keys); k++)
        if (cJSON_GetObjectItemCaseSensitive(item, op_keys[k])) {
            snprintf(sub, sizeof sub, "%s.%s", where, op_keys[k]);
            return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, sub,
                           "a model workload is {\"model\": FILE} (with an optional \"label\"): \"%s\" is for an "
                           "op",
                           op_keys[k]);
        }
    snprintf(sub, sizeof sub, "%s.model", where);
    if (c->is_replay)
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, sub,
                       "a model's tasks are tuned and its network timed live: \"measure\": \"live\"");
    /* the label: as given, else the file's name without ".onnx" */
    char name[72];
    size_t n = 0;
    if (label) {
        size_t len = strlen(label), n_good = 0;
        while (n_good < len && is_name_char((unsigned char)label[n_good])) n_good++;
        if (n_good < len || len > 64) {
            snprintf(sub, sizeof sub, "%s.label", where);
            return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, sub,
                           "'%.80s' is not a label: 1 to 64 letters, digits, '.', '_' or '-' (it names the model's "
                           "plots and its runs' databases)",
                           label);
        }
        snprintf(name, sizeof name, "%s", label);
    } else {
        const char *base = strrchr(model, '/');
        base = base ? base + 1 : model;
        size_t len = strlen(base);
        if (len > 5 && strcmp(base + len - 5, ".onnx") == 0) len -= 5;
        for (; n < len && n < 64; n++) name[n] = is_name_char((unsigned char)base[n]) ? base[n] : '_';
        name[n] = '\0';
        if (n == 0) snprintf(name, sizeof name, "model");
    }
    bool has_failed = false;
    w->spec = dup_or_fail(model, &has_failed);
    w->label = dup_or_fail(name, &has_failed);
    w->model = resolve_path(c->path, model);
    has_failed |= !w->model;
    if (has_failed) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading %s", c->path);
    for (int j = 0; j < i; j++) {
        if (strcmp(c->workloads[j].model, w->model) == 0)
            return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, sub, "the same model as workloads[%d] (%s)", j,
                           w->model);
        if (strcmp(c->workloads[j].label, w->label) == 0) {
            snprintf(sub, sizeof sub, "%s%s", where, label ? ".label" : ".model");
            return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, sub,
                           "label '%s' is workloads[%d]'s already: it names the model's plots and its runs' "
                           "databases; give one a \"label\" of its own",
                           w->label, j);
        }
    }
    return RLT_STATUS_OK;
}

static rlt_status parse_workload(rlt_exp_config *c, const cJSON *item, int i, rlt_diag *diag)
{
    static const char *const keys[] = {"op", "expr", "shape", "dataset", "model", "label", NULL};
    char where[64], sub[96], got[128];
    snprintf(where, sizeof where, "workloads[%d]", i);
    rlt_exp_workload *w = &c->workloads[i];
    if (!cJSON_IsObject(item)) {
        describe(item, got, sizeof got);
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, where, "expected an object %s, got %s",
                       c->is_model     ? "{\"model\": FILE}"
                       : c->is_replay ? "{\"op\": SPEC, \"dataset\": FILE}"
                                      : "{\"op\": SPEC} or {\"model\": FILE}",
                       got);
    }
    rlt_status st = check_keys(c->path, item, where, keys, diag);
    if (st != RLT_STATUS_OK) return st;
    const char *op_text = NULL, *expr = NULL, *shape = NULL, *dataset = NULL, *model = NULL, *label = NULL;
    if ((st = get_string(c->path, item, where, "op", false, "an op spec", &op_text, diag)) ||
        (st = get_string(c->path, item, where, "expr", false, "an expression", &expr, diag)) ||
        (st = get_string(c->path, item, where, "shape", false, "the expression's shape", &shape, diag)) ||
        (st = get_string(c->path, item, where, "dataset", false, "a dataset file", &dataset, diag)) ||
        (st = get_string(c->path, item, where, "model", false, "an ONNX model file", &model, diag)) ||
        (st = get_string(c->path, item, where, "label", false, "a label", &label, diag)))
        return st;
    if ((model != NULL) != c->is_model) {
        snprintf(sub, sizeof sub, "%s%s", where, model ? ".model" : "");
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, sub,
                       "an experiment is over ops or over models, not both: workloads[0] is %s",
                       c->is_model ? "a model" : "an op");
    }
    if (model) return parse_model_workload(c, item, i, model, label, diag);
    if (label) {
        snprintf(sub, sizeof sub, "%s.label", where);
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, sub,
                       "\"label\" names a model workload; an op is named by its spec");
    }
    if (op_text && (expr || shape)) {
        snprintf(sub, sizeof sub, "%s.%s", where, expr ? "expr" : "shape");
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, sub, "give either \"op\" or \"expr\" and \"shape\", "
                                                                        "not both");
    }
    if (!op_text && !(expr && shape)) {
        snprintf(sub, sizeof sub, "%s.%s", where, expr ? "shape" : shape ? "expr" : "op");
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, sub,
                       "missing: a workload is an op spec (\"op\": \"matmul:M=64,N=64,K=64\"), an expression "
                       "(\"expr\" with \"shape\") or a model (\"model\": FILE)");
    }
    rlt_op *op = NULL;
    rlt_diag d = {0};
    st = op_text ? rlt_op_parse(op_text, &op, &d) : rlt_op_from_expr(expr, shape, &op, &d);
    if (st != RLT_STATUS_OK) {
        snprintf(sub, sizeof sub, "%s.%s", where, op_text ? "op" : "expr");
        return rlt_exp_fail_at(diag, st == RLT_STATUS_OUT_OF_MEMORY ? st : RLT_STATUS_INVALID_ARGUMENT, c->path, sub, "%s",
                       d.message);
    }
    bool has_failed = false;
    w->spec = dup_or_fail(op->spec, &has_failed);
    rlt_op_destroy(op);
    w->op_text = dup_or_fail(op_text, &has_failed);
    w->expr = dup_or_fail(expr, &has_failed);
    w->shape = dup_or_fail(shape, &has_failed);
    if (c->is_replay) {
        if (!dataset) {
            snprintf(sub, sizeof sub, "%s.dataset", where);
            return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, sub,
                           "missing: a replay answers each workload from a dataset file (made by 'rltune dataset "
                           "--op %s --out FILE'), relative to the config's directory",
                           w->spec ? w->spec : "SPEC");
        }
        w->dataset_text = dup_or_fail(dataset, &has_failed);
        w->dataset = resolve_path(c->path, dataset);
        has_failed |= !w->dataset;
    } else if (dataset) {
        snprintf(sub, sizeof sub, "%s.dataset", where);
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, sub,
                       "a live experiment measures: \"dataset\" is for \"measure\": \"replay\"");
    }
    if (has_failed) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading %s", c->path);
    for (int j = 0; j < i; j++)
        if (w->spec && strcmp(c->workloads[j].spec, w->spec) == 0 &&
            (!c->is_replay || strcmp(c->workloads[j].dataset, w->dataset) == 0))
            return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, where, "the same workload as workloads[%d] (%s)",
                           j, w->spec);
    return RLT_STATUS_OK;
}

static bool is_tuner_name(const char *name)
{
    for (const char *const *n = rlt_tuner_names(); *n; n++)
        if (strcmp(*n, name) == 0) return true;
    return false;
}

static rlt_status unknown_tuner(const rlt_exp_config *c, const char *where, const char *name, rlt_diag *diag)
{
    rlt_str known;
    rlt_str_init(&known);
    for (const char *const *n = rlt_tuner_names(); *n; n++) rlt_str_printf(&known, "%s%s", *n, n[1] ? ", " : "");
    rlt_status st = rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, where, "unknown tuner '%.100s' (tuners: %s)",
                            name, known.data ? known.data : "");
    rlt_str_free(&known);
    return st;
}

static rlt_status parse_tuner(rlt_exp_config *c, const cJSON *item, int i, rlt_diag *diag)
{
    static const char *const keys[] = {"name", "label", "options", "carry_agent", NULL};
    char where[64], sub[96], got[128];
    snprintf(where, sizeof where, "tuners[%d]", i);
    rlt_exp_tuner *t = &c->tuners[i];
    const char *name = NULL, *label = NULL;
    const cJSON *options = NULL;
    rlt_status st;
    if (cJSON_IsString(item)) {
        name = item->valuestring;
        if (!is_tuner_name(name)) return unknown_tuner(c, where, name, diag);
    } else if (cJSON_IsObject(item)) {
        if ((st = check_keys(c->path, item, where, keys, diag)) ||
            (st = get_string(c->path, item, where, "name", true, "a tuner's name", &name, diag)) ||
            (st = get_string(c->path, item, where, "label", false, "a label", &label, diag)))
            return st;
        snprintf(sub, sizeof sub, "%s.name", where);
        if (!is_tuner_name(name)) return unknown_tuner(c, sub, name, diag);
        const cJSON *carry = cJSON_GetObjectItemCaseSensitive(item, "carry_agent");
        if (carry && !cJSON_IsBool(carry)) {
            describe(carry, got, sizeof got);
            snprintf(sub, sizeof sub, "%s.carry_agent", where);
            return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, sub, "expected true or false, got %s", got);
        }
        t->carry_agent = carry && cJSON_IsTrue(carry);
        options = cJSON_GetObjectItemCaseSensitive(item, "options");
        if (options) {
            snprintf(sub, sizeof sub, "%s: %s.options", c->path, where);
            if ((st = rlt_tuner_opts_set_json(&t->opts, name, options, sub, diag)) != RLT_STATUS_OK) return st;
        }
    } else {
        describe(item, got, sizeof got);
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, where,
                       "expected a tuner's name or {\"name\": ..., \"label\": ..., \"options\": {...}}, got %s", got);
    }
    if (label && strlen(label) > 64) {
        snprintf(sub, sizeof sub, "%s.label", where);
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, sub, "longer than 64 characters");
    }
    bool has_failed = false;
    t->name = dup_or_fail(name, &has_failed);
    t->label = dup_or_fail(label ? label : name, &has_failed);
    t->options_json = options ? cJSON_PrintUnformatted(options) : NULL;
    if (options && t->options_json) {
        /* cJSON's allocation, moved to ours so that one free fits all */
        char *copy = rlt_strdup(t->options_json);
        cJSON_free(t->options_json);
        t->options_json = copy;
    } else if (!options) {
        t->options_json = rlt_strdup("{}");
    }
    if (has_failed || !t->options_json)
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading %s", c->path);
    for (int j = 0; j < i; j++)
        if (strcmp(c->tuners[j].label, t->label) == 0) {
            snprintf(sub, sizeof sub, "%s%s", where, label ? ".label" : "");
            return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, sub,
                           "label '%s' is tuners[%d]'s already: give each tuner a label of its own (\"label\": ...)",
                           t->label, j);
        }
    return RLT_STATUS_OK;
}

/* A non-empty array at root[key] of at most max items. */
static rlt_status get_list(const rlt_exp_config *c, const cJSON *root, const char *key, int max, const char *what,
                           const cJSON **out, rlt_diag *diag)
{
    char got[128];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    *out = v;
    if (!v) return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, key, "missing: a list of %s is required", what);
    int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 0;
    if (n < 1 || n > max) {
        describe(v, got, sizeof got);
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, key, "expected a list of 1 to %d %s, got %s%s", max,
                       what, got, cJSON_IsArray(v) ? (n ? " too long" : " (empty)") : "");
    }
    return RLT_STATUS_OK;
}

/* The file name a tuner's label gives its runs' databases: every
 * character outside [A-Za-z0-9._-] as '_'. */
static void tuner_file_label(const char *label, char *buf, size_t cap)
{
    size_t n = 0;
    for (; label[n] && n + 1 < cap; n++) buf[n] = is_name_char((unsigned char)label[n]) ? label[n] : '_';
    buf[n] = '\0';
}

/* The keys and tuners of a model experiment, once its workloads and tuners
 * are read: what only op experiments take is refused, and the runs'
 * databases must get names of their own. */
static rlt_status check_model_config(rlt_exp_config *c, const cJSON *root, rlt_diag *diag)
{
    if (cJSON_GetObjectItemCaseSensitive(root, "db"))
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, "db",
                       "each run of a model keeps its records in a database of its own, under \"records_dir\" "
                       "(docs/experiment.md, \"Whole models\")");
    if (cJSON_GetObjectItemCaseSensitive(root, "early_stopping"))
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, "early_stopping",
                       "a model's tasks share one budget: \"trials\" and \"time_budget_s\" end its runs");
    char a[80], b[80], key[64];
    for (int t = 0; t < c->n_tuners; t++) {
        const rlt_exp_tuner *tu = &c->tuners[t];
        if (tu->carry_agent) {
            snprintf(key, sizeof key, "tuners[%d].carry_agent", t);
            return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, key,
                           "a model's tasks are tuned by sessions of their own: no agent is carried in an "
                           "experiment over models");
        }
        snprintf(key, sizeof key, "tuners[%d]%s", t, strcmp(tu->label, tu->name) ? ".label" : "");
        if (strcmp(tu->label, "untuned") == 0)
            return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, key,
                           "'untuned' names the network compiled from seed schedules in the outputs: give this "
                           "tuner another label");
        tuner_file_label(tu->label, a, sizeof a);
        for (int j = 0; j < t; j++) {
            tuner_file_label(c->tuners[j].label, b, sizeof b);
            if (strcmp(a, b) == 0)
                return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, key,
                               "label '%s' gives its runs' databases the names of tuners[%d]'s ('%s': every "
                               "character but letters, digits, '.', '_' and '-' becomes '_'): choose another",
                               tu->label, j, c->tuners[j].label);
        }
    }
    return RLT_STATUS_OK;
}

/* Whether the config's first workload is a model (what decides which keys
 * the config takes, before the workloads are read one by one). */
static bool peek_is_model(const cJSON *root)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "workloads");
    const cJSON *first = cJSON_IsArray(list) ? cJSON_GetArrayItem(list, 0) : NULL;
    return cJSON_IsObject(first) && cJSON_GetObjectItemCaseSensitive(first, "model") != NULL;
}

static rlt_status parse_root(rlt_exp_config *c, const cJSON *root, rlt_diag *diag)
{
    static const char *const keys[] = {"name",    "description", "measure", "trials", "seeds",  "batch",
                                       "early_stopping", "db",   "out",     "threads", "cc",    "cflags",
                                       "repeat",  "min_repeat_ms", "timeout", "workloads", "tuners", "mode",
                                       "time_budget_s", "run_repeat", "records_dir", "rule_seeds", NULL};
    static const char *const live_only[] = {"db", "threads", "cc", "cflags", "repeat", "min_repeat_ms", "timeout"};
    static const char *const model_only[] = {"mode", "time_budget_s", "run_repeat", "records_dir", "rule_seeds"};
    char got[128];
    rlt_status st;
    if (!cJSON_IsObject(root)) {
        describe(root, got, sizeof got);
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, NULL,
                       "expected one JSON object of settings (docs/experiment.md), got %s", got);
    }
    if ((st = check_unique_keys(c->path, root, "", diag)) || (st = check_keys(c->path, root, "", keys, diag)))
        return st;
    const char *name = NULL, *description = NULL, *measure = NULL, *db = NULL, *out = NULL, *cc = NULL,
               *cflags = NULL;
    if ((st = get_string(c->path, root, "", "name", true, "the experiment's name", &name, diag)) ||
        (st = get_string(c->path, root, "", "measure", true, "\"live\" or \"replay\"", &measure, diag)))
        return st;
    size_t name_len = strlen(name), n_good = 0;
    while (n_good < name_len && is_name_char((unsigned char)name[n_good])) n_good++;
    if (n_good < name_len || name_len > 64)
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, "name",
                       "'%.80s' is not a name: 1 to 64 letters, digits, '.', '_' or '-' (it names the "
                       "output directory, experiment-NAME)",
                       name);
    if (strcmp(measure, "live") != 0 && strcmp(measure, "replay") != 0)
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, "measure",
                       "unknown mode '%.80s': expected \"live\" (build, run and time here) or \"replay\" (answer "
                       "from each workload's dataset)",
                       measure);
    c->is_replay = strcmp(measure, "replay") == 0;
    c->is_model = peek_is_model(root);
    if (!c->is_model)
        for (size_t i = 0; i < RLT_ARRAY_LEN(model_only); i++)
            if (cJSON_GetObjectItemCaseSensitive(root, model_only[i]))
                return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, model_only[i],
                               "\"%s\" is for an experiment over whole models (workloads {\"model\": FILE})",
                               model_only[i]);
    const char *mode = NULL;
    if ((st = get_string(c->path, root, "", "mode", false, "\"tune\" or \"benchmark\"", &mode, diag)) != RLT_STATUS_OK)
        return st;
    if (mode && strcmp(mode, "tune") != 0 && strcmp(mode, "benchmark") != 0)
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, "mode",
                       "unknown mode '%.80s': expected \"tune\" (tune each model with each tuner and seed, then "
                       "time its network) or \"benchmark\" (time the networks the runs' databases give)",
                       mode);
    c->is_benchmark = mode && strcmp(mode, "benchmark") == 0;
    if (c->is_replay)
        for (size_t i = 0; i < RLT_ARRAY_LEN(live_only); i++)
            if (cJSON_GetObjectItemCaseSensitive(root, live_only[i]))
                return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, live_only[i],
                               "a replay %s: \"%s\" is for \"measure\": \"live\"",
                               i == 0 ? "stores no records" : "runs nothing (the dataset's own settings hold)",
                               live_only[i]);
    int64_t trials = 0, batch = 16, early = 0, threads = 0, repeat = 0, run_repeat = 10, rule_seeds = 0;
    const char *records_dir = NULL;
    if ((st = get_string(c->path, root, "", "description", false, "a description", &description, diag)) ||
        (st = get_int(c->path, root, "", "trials", 1, MAX_TRIALS, !c->is_benchmark, &trials, diag)) ||
        (st = parse_seeds(c, root, diag)) ||
        (st = get_int(c->path, root, "", "batch", 1, 256, false, &batch, diag)) ||
        (st = get_int(c->path, root, "", "early_stopping", 1, MAX_TRIALS, false, &early, diag)) ||
        (st = get_string(c->path, root, "", "db", false, "a records database file", &db, diag)) ||
        (st = get_string(c->path, root, "", "out", false, "an output directory", &out, diag)) ||
        (st = get_int(c->path, root, "", "threads", 1, 256, false, &threads, diag)) ||
        (st = get_string(c->path, root, "", "cc", false, "a compiler command", &cc, diag)) ||
        (st = get_string(c->path, root, "", "cflags", false, "compiler flags", &cflags, diag)) ||
        (st = get_int(c->path, root, "", "repeat", 1, 1000, false, &repeat, diag)) ||
        (st = get_positive(c->path, root, "min_repeat_ms", 1e6, &c->min_repeat_ms, diag)) ||
        (st = get_positive(c->path, root, "timeout", 1e6, &c->timeout_s, diag)) ||
        (st = get_positive(c->path, root, "time_budget_s", 1e8, &c->time_budget_s, diag)) ||
        (st = get_int(c->path, root, "", "run_repeat", 1, 1000, false, &run_repeat, diag)) ||
        (st = get_int(c->path, root, "", "rule_seeds", 0, 64, false, &rule_seeds, diag)) ||
        (st = get_string(c->path, root, "", "records_dir", false, "a directory", &records_dir, diag)))
        return st;
    c->run_repeat = (int)run_repeat;
    c->rule_seeds = (int)rule_seeds;
    c->n_trials = (int)trials;
    c->batch_size = (int)batch;
    c->early_stopping = (int)early;
    c->n_threads = (int)threads;
    c->repeat = (int)repeat;
    bool has_failed = false;
    c->name = dup_or_fail(name, &has_failed);
    c->description = dup_or_fail(description ? description : "", &has_failed);
    c->cc = dup_or_fail(cc, &has_failed);
    c->cflags = dup_or_fail(cflags, &has_failed);
    if (!c->is_replay && !c->is_model) {
        c->db = db ? resolve_path(c->path, db) : rlt_strdup("rltune.db");
        has_failed |= !c->db;
    }
    if (out) {
        c->out = resolve_path(c->path, out);
        has_failed |= !c->out;
    }
    if (c->is_model) {
        /* not --out's: the records stay where the config says, so that a
         * rerun finds them whatever directory its report goes to */
        if (records_dir) {
            c->records_dir = resolve_path(c->path, records_dir);
        } else {
            rlt_str dir;
            rlt_str_init(&dir);
            if (c->out)
                rlt_str_printf(&dir, "%s/records", c->out);
            else
                rlt_str_printf(&dir, "experiment-%s/records", c->name);
            c->records_dir = rlt_str_take(&dir);
        }
        has_failed |= !c->records_dir;
    }
    if (has_failed) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading %s", c->path);

    const cJSON *list = NULL, *item;
    if ((st = get_list(c, root, "workloads", RLT_EXP_MAX_WORKLOADS, "workloads", &list, diag)) != RLT_STATUS_OK)
        return st;
    c->workloads = rlt_calloc((size_t)cJSON_GetArraySize(list), sizeof *c->workloads);
    if (!c->workloads) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading %s", c->path);
    cJSON_ArrayForEach(item, list)
    {
        if ((st = parse_workload(c, item, c->n_workloads, diag)) != RLT_STATUS_OK) {
            c->n_workloads++; /* so that destroy frees what it holds */
            return st;
        }
        c->n_workloads++;
    }
    if ((st = get_list(c, root, "tuners", RLT_EXP_MAX_TUNERS, "tuners", &list, diag)) != RLT_STATUS_OK) return st;
    c->tuners = rlt_calloc((size_t)cJSON_GetArraySize(list), sizeof *c->tuners);
    if (!c->tuners) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading %s", c->path);
    cJSON_ArrayForEach(item, list)
    {
        if ((st = parse_tuner(c, item, c->n_tuners, diag)) != RLT_STATUS_OK) {
            c->n_tuners++;
            return st;
        }
        c->n_tuners++;
    }
    if (c->is_model && (st = check_model_config(c, root, diag)) != RLT_STATUS_OK) return st;
    int64_t n_runs = (int64_t)c->n_workloads * c->n_tuners * c->n_seeds;
    if (n_runs > RLT_EXP_MAX_RUNS)
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, "seeds",
                       "%d workloads x %d tuners x %d seeds make %" PRId64 " runs, more than the %d allowed",
                       c->n_workloads, c->n_tuners, c->n_seeds, n_runs, RLT_EXP_MAX_RUNS);
    return RLT_STATUS_OK;
}

/* "PATH:LINE:COLUMN" of the byte at `at` in text. */
static void locate(const char *text, const char *at, int *out_line, int *out_col)
{
    int line = 1, col = 1;
    for (const char *p = text; *p && p < at; p++) {
        if (*p == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    *out_line = line;
    *out_col = col;
}

rlt_status rlt_exp_config_parse(const char *path, const char *text, rlt_exp_config **out, rlt_diag *diag)
{
    *out = NULL;
    rlt_exp_config *c = rlt_calloc(1, sizeof *c);
    if (!c) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading %s", path);
    c->path = rlt_strdup(path);
    c->text = rlt_strdup(text);
    if (!c->path || !c->text) {
        rlt_exp_config_destroy(c);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading %s", path);
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, true);
    rlt_status st;
    if (!root) {
        int line, col;
        if (!end) end = text;
        locate(text, end, &line, &col);
        char near[24] = "";
        size_t k = 0;
        for (const char *p = end; *p && *p != '\n' && k + 1 < sizeof near; p++) near[k++] = *p;
        near[k] = '\0';
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s:%d:%d: malformed JSON%s%s%s", path, line, col,
                      *near ? " near '" : " (it ends too early)", near, *near ? "'" : "");
    } else {
        st = parse_root(c, root, diag);
    }
    cJSON_Delete(root);
    if (st != RLT_STATUS_OK) {
        rlt_exp_config_destroy(c);
        return st;
    }
    *out = c;
    return RLT_STATUS_OK;
}

rlt_status rlt_exp_config_load(const char *path, rlt_exp_config **out, rlt_diag *diag)
{
    char *text = NULL;
    *out = NULL;
    rlt_status st = rlt_text_file_read(path, &text, diag);
    if (st != RLT_STATUS_OK) return st;
    st = rlt_exp_config_parse(path, text, out, diag);
    rlt_free(text);
    return st;
}

void rlt_exp_config_destroy(rlt_exp_config *c)
{
    if (!c) return;
    for (int i = 0; i < c->n_workloads; i++) {
        rlt_exp_workload *w = &c->workloads[i];
        rlt_free(w->op_text);
        rlt_free(w->expr);
        rlt_free(w->shape);
        rlt_free(w->spec);
        rlt_free(w->dataset);
        rlt_free(w->dataset_text);
        rlt_free(w->model);
        rlt_free(w->label);
    }
    for (int i = 0; i < c->n_tuners; i++) {
        rlt_free(c->tuners[i].name);
        rlt_free(c->tuners[i].label);
        rlt_free(c->tuners[i].options_json);
    }
    rlt_free(c->workloads);
    rlt_free(c->tuners);
    rlt_free(c->seeds);
    rlt_free(c->path);
    rlt_free(c->text);
    rlt_free(c->name);
    rlt_free(c->description);
    rlt_free(c->db);
    rlt_free(c->out);
    rlt_free(c->cc);
    rlt_free(c->cflags);
    rlt_free(c->records_dir);
    rlt_free(c);
}

const char *rlt_exp_config_out_dir(const rlt_exp_config *c, char *buf, size_t cap)
{
    if (c->out) return c->out;
    snprintf(buf, cap, "experiment-%s", c->name);
    return buf;
}

/* RECORDS_DIR/LABEL/TUNER-sSEED plus suffix. */
static bool run_path(const rlt_exp_config *c, int workload, int tuner, uint64_t seed, const char *suffix, char *buf,
                     size_t cap)
{
    char label[80];
    tuner_file_label(c->tuners[tuner].label, label, sizeof label);
    int n = snprintf(buf, cap, "%s/%s/%s-s%" PRIu64 "%s", c->records_dir, c->workloads[workload].label, label, seed,
                     suffix);
    return n >= 0 && (size_t)n < cap;
}

bool rlt_exp_run_db_path(const rlt_exp_config *c, int workload, int tuner, uint64_t seed, char *buf, size_t cap)
{
    return run_path(c, workload, tuner, seed, ".db", buf, cap);
}

bool rlt_exp_run_cache_path(const rlt_exp_config *c, int workload, int tuner, uint64_t seed, char *buf, size_t cap)
{
    return run_path(c, workload, tuner, seed, ".cache", buf, cap);
}

/* ---- opening ------------------------------------------------------------------ */

struct rlt_exp {
    const rlt_exp_config *c;
    rlt_op **ops;          /* per workload */
    rlt_replay **replays;  /* per workload (replay) */
    rlt_db *db;            /* live */
    rlt_exp_workload_result *known; /* per workload: target, dataset, the dataset's best */
    rlt_str target;        /* live: the target key */
    /* live: whether clang is installed (the space's cc knob), found once
     * so that every run of the experiment has the same space even if PATH
     * changes under it. 0 unknown, 1 yes, -1 no. */
    int has_clang;
    rlt_exp_models *models; /* a model experiment's (models.c); the rest is unused then */
};

/* The workload's op, as the config gives it. */
static rlt_status op_load(const rlt_exp_workload *w, rlt_op **out, rlt_diag *diag)
{
    return w->op_text ? rlt_op_parse(w->op_text, out, diag) : rlt_op_from_expr(w->expr, w->shape, out, diag);
}

/* The build, run and space options of a live experiment. */
static void live_opts(const rlt_exp *e, rlt_tune_opts *o)
{
    const rlt_exp_config *c = e->c;
    o->space.has_clang = e->has_clang > 0;
    o->space.no_clang = e->has_clang < 0;
    o->n_threads = c->n_threads > 0 ? c->n_threads : 1;
    o->build = (rlt_build_opts){.cc = c->cc, .cflags = c->cflags};
    o->run = (rlt_run_opts){.repeat = c->repeat > 0 ? c->repeat : 3,
                            .min_repeat_ms = c->min_repeat_ms > 0 ? c->min_repeat_ms : 10,
                            .timeout_s = c->timeout_s > 0 ? c->timeout_s : 10};
}

/* Opens workload i's dataset; its best OK record is the best known. */
static rlt_status open_dataset(rlt_exp *e, int i, rlt_diag *diag)
{
    const rlt_exp_config *c = e->c;
    const rlt_exp_workload *w = &c->workloads[i];
    char key[64];
    snprintf(key, sizeof key, "workloads[%d].dataset", i);
    rlt_diag d = {0};
    /* no target check: a replay answers for the dataset's target (threads,
     * compiler and flags), which the report states */
    rlt_status st = rlt_replay_open(w->dataset, e->ops[i], NULL, &e->replays[i], &d);
    if (st != RLT_STATUS_OK)
        return rlt_exp_fail_at(diag, st, c->path, key, "%s", d.message);
    const rlt_dataset_info *info = rlt_replay_info(e->replays[i]);
    rlt_exp_workload_result *k = &e->known[i];
    k->dataset = *info;
    snprintf(k->target, sizeof k->target, "%s", info->target);
    rlt_db *db = NULL;
    rlt_record best;
    bool found = false;
    if ((st = rlt_db_open(w->dataset, &(rlt_db_opts){.is_read_only = true}, &db, &d)) == RLT_STATUS_OK)
        st = rlt_db_best(db, info->spec, info->target, &best, &found, &d);
    rlt_db_close(db);
    if (st != RLT_STATUS_OK) return rlt_exp_fail_at(diag, st, c->path, key, "%s", d.message);
    k->best_known_gflops = found ? best.gflops : 0;
    const char *of = info->fixed[0] ? "sub-space with " : "space";
    const char *fixed = info->fixed[0] ? info->fixed : "";
    if (info->is_complete)
        snprintf(k->best_known_source, sizeof k->best_known_source,
                 "the best in the dataset (complete: every one of the %d valid configurations of the %s%s)",
                 info->n_configs, of, fixed);
    else
        snprintf(k->best_known_source, sizeof k->best_known_source,
                 "the best in the dataset (a uniform sample of %d configurations of the %s%s)", info->n_configs, of,
                 fixed);
    return RLT_STATUS_OK;
}

/* Opens the records database of a live experiment; a dataset is refused. */
static rlt_status open_db(rlt_exp *e, rlt_diag *diag)
{
    const rlt_exp_config *c = e->c;
    rlt_diag d = {0};
    rlt_str value;
    rlt_str_init(&value);
    bool is_dataset = false;
    rlt_status st = rlt_db_open(c->db, &(rlt_db_opts){0}, &e->db, &d);
    if (st == RLT_STATUS_OK) st = rlt_db_meta_get(e->db, RLT_DATASET_META_KEY, &value, &is_dataset, &d);
    rlt_str_free(&value);
    if (st != RLT_STATUS_OK) return rlt_exp_fail_at(diag, st, c->path, "db", "%s", d.message);
    if (is_dataset)
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, "db",
                       "'%s' is a dataset (made by 'rltune dataset'), which holds only its own measurements: "
                       "replay it (\"measure\": \"replay\"), or measure into another database",
                       c->db);
    return RLT_STATUS_OK;
}

/* The space workload i's runs search: the dataset's in a replay, else the
 * op's with the experiment's options (the first call finds out whether
 * clang is there, for every later one). */
static rlt_status workload_space(rlt_exp *e, int i, rlt_space *space, rlt_diag *diag)
{
    const rlt_exp_config *c = e->c;
    if (c->is_replay) {
        *space = *rlt_replay_space(e->replays[i]);
        return RLT_STATUS_OK;
    }
    rlt_diag d = {0};
    rlt_tune_opts o = {0};
    live_opts(e, &o);
    o.space.n_threads = o.n_threads;
    rlt_status st = rlt_space_create(e->ops[i], &o.space, space, &d);
    if (st != RLT_STATUS_OK) {
        char key[64];
        snprintf(key, sizeof key, "workloads[%d]", i);
        return rlt_exp_fail_at(diag, st, c->path, key, "%s", d.message);
    }
    if (e->has_clang == 0) {
        e->has_clang = -1;
        for (int k = 0; k < space->n_knobs; k++)
            if (space->knobs[k].kind == RLT_KNOB_CC) e->has_clang = 1;
    }
    return RLT_STATUS_OK;
}

/* Creates every tuner on workload i's space once: options that the tuner
 * refuses (a value out of its range) are reported before anything runs. */
static rlt_status check_tuners(rlt_exp *e, int i, rlt_diag *diag)
{
    const rlt_exp_config *c = e->c;
    rlt_space space;
    rlt_diag d = {0};
    rlt_status st = workload_space(e, i, &space, diag);
    if (st != RLT_STATUS_OK) return st;
    for (int t = 0; t < c->n_tuners; t++) {
        rlt_tuner *tuner = NULL;
        rlt_tuner_opts opts = c->tuners[t].opts;
        opts.seed = 0;
        st = rlt_tuner_create(c->tuners[t].name, &space, &opts, &tuner, &d);
        bool has_agent = st == RLT_STATUS_OK && rlt_tuner_has_agent(tuner);
        rlt_tuner_destroy(tuner);
        if (st == RLT_STATUS_OK && c->tuners[t].carry_agent && !has_agent) {
            char key[64];
            snprintf(key, sizeof key, "tuners[%d].carry_agent", t);
            return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, key,
                           "%s keeps no agent to carry (the learning tuners do: ga-dqn, dqn, bandit, ppo)",
                           c->tuners[t].name);
        }
        if (st != RLT_STATUS_OK) {
            char key[160];
            rlt_exp_tuner_option_key(c, t, d.message, key, sizeof key);
            return rlt_exp_fail_at(diag, st == RLT_STATUS_OUT_OF_MEMORY ? st : RLT_STATUS_INVALID_ARGUMENT, c->path, key,
                           "%s (on workloads[%d], %s)", d.message, i, c->workloads[i].spec);
        }
    }
    return RLT_STATUS_OK;
}

/* Whether any tuner of the config carries its agent between workloads. */
static bool any_carries(const rlt_exp_config *c)
{
    for (int t = 0; t < c->n_tuners; t++)
        if (c->tuners[t].carry_agent) return true;
    return false;
}

/* A new private directory for carried agents, in $TMPDIR or /tmp. */
static rlt_status make_agent_dir(char *dir, size_t cap, rlt_diag *diag)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    snprintf(dir, cap, "%.200s/rltune-agents-XXXXXX", tmp);
    if (!mkdtemp(dir))
        return rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot make a directory for the carried agents in %s: %s", tmp,
                        strerror(errno));
    return RLT_STATUS_OK;
}

/* Where tuner t's agent of seed index s waits for the next workload. */
static void agent_path(const char *dir, int t, int s, char *path, size_t cap)
{
    snprintf(path, cap, "%s/t%d-s%d.agent", dir, t, s);
}

/* Removes the directory and the agents in it (t < n_tuners, s < n_seeds,
 * and the check's t-1). */
static void remove_agent_dir(const char *dir, int n_tuners, int n_seeds)
{
    char path[512];
    for (int t = -1; t < n_tuners; t++)
        for (int s = 0; s < (t < 0 ? 1 : n_seeds); s++) {
            agent_path(dir, t, s, path, sizeof path);
            unlink(path);
        }
    rmdir(dir);
}

/* A carried agent must fit each next workload: an agent of a fresh tuner
 * on workload i - 1 is saved and loaded into one on workload i, for every
 * carrying tuner, before anything runs (knobs that differ between the
 * workloads' spaces are refused here, not after hours of runs). */
static rlt_status check_carry(rlt_exp *e, rlt_diag *diag)
{
    const rlt_exp_config *c = e->c;
    if (!any_carries(c) || c->n_workloads < 2) return RLT_STATUS_OK;
    char dir[256], path[512];
    rlt_status st = make_agent_dir(dir, sizeof dir, diag);
    if (st != RLT_STATUS_OK) return st;
    agent_path(dir, -1, 0, path, sizeof path);
    for (int t = 0; t < c->n_tuners && st == RLT_STATUS_OK; t++) {
        if (!c->tuners[t].carry_agent) continue;
        rlt_space from, to;
        if ((st = workload_space(e, 0, &from, diag)) != RLT_STATUS_OK) break;
        for (int i = 1; i < c->n_workloads && st == RLT_STATUS_OK; i++, from = to) {
            rlt_tuner *a = NULL, *b = NULL;
            rlt_tuner_opts opts = c->tuners[t].opts;
            opts.seed = 0;
            rlt_diag d = {0};
            if ((st = workload_space(e, i, &to, diag)) != RLT_STATUS_OK) break;
            st = rlt_tuner_create(c->tuners[t].name, &from, &opts, &a, &d);
            if (st == RLT_STATUS_OK) st = rlt_tuner_save(a, path, &d);
            if (st == RLT_STATUS_OK) st = rlt_tuner_create(c->tuners[t].name, &to, &opts, &b, &d);
            if (st == RLT_STATUS_OK) st = rlt_tuner_load(b, path, &d);
            rlt_tuner_destroy(a);
            rlt_tuner_destroy(b);
            if (st != RLT_STATUS_OK) {
                char key[64];
                snprintf(key, sizeof key, "tuners[%d].carry_agent", t);
                st = rlt_exp_fail_at(diag, st, c->path, key,
                             "workloads[%d] (%s) cannot start from the agent of workloads[%d] (%s): %s", i,
                             c->workloads[i].spec, i - 1, c->workloads[i - 1].spec, d.message);
            }
        }
    }
    remove_agent_dir(dir, 0, 0);
    return st;
}

rlt_status rlt_exp_open(const rlt_exp_config *c, rlt_exp **out, rlt_diag *diag)
{
    *out = NULL;
    rlt_exp *e = rlt_calloc(1, sizeof *e);
    if (!e) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory opening the experiment");
    e->c = c;
    rlt_str_init(&e->target);
    rlt_status st = RLT_STATUS_OK;
    if (c->is_model) {
        if ((st = rlt_exp_models_open(c, &e->models, diag)) != RLT_STATUS_OK) goto done;
        *out = e;
        return RLT_STATUS_OK;
    }
    size_t n = (size_t)c->n_workloads;
    e->ops = rlt_calloc(n, sizeof *e->ops);
    e->replays = rlt_calloc(n, sizeof *e->replays);
    e->known = rlt_calloc(n, sizeof *e->known);
    if (!e->ops || !e->replays || !e->known) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory opening the experiment");
        goto done;
    }
    for (int i = 0; i < c->n_workloads; i++) {
        rlt_diag d = {0};
        if ((st = op_load(&c->workloads[i], &e->ops[i], &d)) != RLT_STATUS_OK) {
            st = rlt_fail(diag, st, "%s: workloads[%d]: %s", c->path, i, d.message);
            goto done;
        }
    }
    if (c->is_replay) {
        for (int i = 0; i < c->n_workloads; i++)
            if ((st = open_dataset(e, i, diag)) != RLT_STATUS_OK) goto done;
    } else {
        rlt_tune_opts o = {0};
        live_opts(e, &o);
        rlt_tune_target_key(&o.build, o.n_threads, &e->target);
        if (e->target.has_failed) {
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory opening the experiment");
            goto done;
        }
        for (int i = 0; i < c->n_workloads; i++)
            snprintf(e->known[i].target, sizeof e->known[i].target, "%s", e->target.data);
    }
    for (int i = 0; i < c->n_workloads; i++)
        if ((st = check_tuners(e, i, diag)) != RLT_STATUS_OK) goto done;
    if ((st = check_carry(e, diag)) != RLT_STATUS_OK) goto done;
    /* last: a live experiment's database is created only for a config
     * that has passed every other check */
    if (!c->is_replay && (st = open_db(e, diag)) != RLT_STATUS_OK) goto done;
done:
    if (st != RLT_STATUS_OK) {
        rlt_exp_close(e);
        return st;
    }
    *out = e;
    return RLT_STATUS_OK;
}

void rlt_exp_close(rlt_exp *e)
{
    if (!e) return;
    rlt_exp_models_close(e->models);
    for (int i = 0; i < e->c->n_workloads; i++) {
        if (e->replays) rlt_replay_close(e->replays[i]);
        if (e->ops) rlt_op_destroy(e->ops[i]);
    }
    rlt_free(e->replays);
    rlt_free(e->ops);
    rlt_free(e->known);
    rlt_db_close(e->db);
    rlt_str_free(&e->target);
    rlt_free(e);
}

/* ---- running ---------------------------------------------------------------------- */

typedef struct progress_ctx {
    const rlt_exp_run_opts *o;
    rlt_exp_progress p;
} progress_ctx;

static void on_tune_progress(const rlt_tune_progress *tp, void *ctx)
{
    progress_ctx *pc = ctx;
    pc->p.tune = tp;
    pc->o->progress(&pc->p, pc->o->progress_ctx);
    pc->p.tune = NULL;
}

/* The best known of each workload once the runs are done: live, the best
 * of every run and of the records database on the target. */
static rlt_status best_known(rlt_exp *e, rlt_exp_result *r, rlt_diag *diag)
{
    const rlt_exp_config *c = e->c;
    for (int i = 0; i < c->n_workloads; i++) {
        rlt_exp_workload_result *k = &r->workloads[i];
        if (c->is_replay) continue;
        double best = 0;
        for (int j = 0; j < r->n_runs; j++)
            if (r->runs[j].workload == i) best = RLT_MAX(best, r->runs[j].tune.best_gflops);
        rlt_record rec;
        bool found = false;
        rlt_status st = rlt_db_best(e->db, c->workloads[i].spec, e->target.data, &rec, &found, diag);
        if (st != RLT_STATUS_OK) return st;
        if (found) best = RLT_MAX(best, rec.gflops);
        k->best_known_gflops = best;
        snprintf(k->best_known_source, sizeof k->best_known_source,
                 "the best of this experiment's runs and of the records in %.400s on this target", c->db);
    }
    return RLT_STATUS_OK;
}

rlt_status rlt_exp_run_all(rlt_exp *e, const rlt_exp_run_opts *o, rlt_exp_result *out, rlt_diag *diag)
{
    const rlt_exp_config *c = e->c;
    memset(out, 0, sizeof *out);
    rlt_target_detect(&out->machine);
    out->n_runs_planned = c->n_workloads * c->n_tuners * c->n_seeds;
    out->runs = rlt_calloc((size_t)out->n_runs_planned, sizeof *out->runs);
    out->workloads = rlt_calloc((size_t)c->n_workloads, sizeof *out->workloads);
    if (!out->runs || !out->workloads)
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory starting the experiment");
    if (e->models) return rlt_exp_models_run(e->models, o, out, diag);
    memcpy(out->workloads, e->known, sizeof *out->workloads * (size_t)c->n_workloads);
    rlt_status st = RLT_STATUS_OK;
    char agent_dir[256] = "";
    bool any_carry = any_carries(c);
    if (any_carry && (st = make_agent_dir(agent_dir, sizeof agent_dir, diag)) != RLT_STATUS_OK) return st;
    progress_ctx pc = {.o = o, .p = {.n_total = out->n_runs_planned}};
    for (int w = 0; w < c->n_workloads && st == RLT_STATUS_OK && !out->was_stopped; w++) {
        for (int s = 0; s < c->n_seeds && st == RLT_STATUS_OK && !out->was_stopped; s++) {
            for (int t = 0; t < c->n_tuners; t++) {
                if (o->stop && *o->stop) {
                    out->was_stopped = true;
                    break;
                }
                const rlt_exp_tuner *tu = &c->tuners[t];
                rlt_exp_run *run = &out->runs[out->n_runs];
                run->workload = w;
                run->tuner = t;
                run->seed = c->seeds[s];
                rlt_tune_opts to = {
                    .tuner = tu->name,
                    .n_trials = c->n_trials,
                    .batch_size = c->batch_size,
                    .early_stopping = c->early_stopping,
                    .seed = run->seed,
                    .tuner_opts = tu->opts,
                };
                char agent[512];
                if (tu->carry_agent) {
                    /* the same seed's agent from the workload before (none
                     * before the first), saved again at the end */
                    agent_path(agent_dir, t, s, agent, sizeof agent);
                    to.agent_in = w > 0 && access(agent, R_OK) == 0 ? agent : NULL;
                    to.agent_out = agent;
                    run->had_agent = to.agent_in != NULL;
                }
                if (c->is_replay) {
                    to.replay = e->replays[w];
                    to.n_threads = rlt_replay_info(e->replays[w])->n_threads;
                } else {
                    live_opts(e, &to);
                    to.db = e->db;
                }
                pc.p.run = NULL;
                pc.p.spec = c->workloads[w].spec;
                pc.p.label = tu->label;
                pc.p.seed = run->seed;
                if (o->progress) {
                    to.progress = on_tune_progress;
                    to.progress_ctx = &pc;
                    o->progress(&pc.p, o->progress_ctx);
                }
                rlt_diag d = {0};
                st = rlt_tune(e->ops[w], &to, &run->tune, &d);
                if (st != RLT_STATUS_OK) {
                    rlt_tune_result_free(&run->tune);
                    memset(run, 0, sizeof *run);
                    rlt_fail(diag, st, "workloads[%d] (%s), tuner %s, seed %" PRIu64 ": %s", w, c->workloads[w].spec,
                             tu->label, c->seeds[s], d.message);
                    break;
                }
                out->n_runs++;
                pc.p.n_done = out->n_runs;
                pc.p.run = run;
                if (o->progress) o->progress(&pc.p, o->progress_ctx);
            }
        }
    }
    if (any_carry) remove_agent_dir(agent_dir, c->n_tuners, c->n_seeds);
    rlt_diag d = {0};
    rlt_status known_st = best_known(e, out, &d);
    if (st == RLT_STATUS_OK && known_st != RLT_STATUS_OK) st = rlt_fail(diag, known_st, "%s", d.message);
    return st;
}

void rlt_exp_result_free(rlt_exp_result *r)
{
    for (int i = 0; i < r->n_runs; i++) {
        rlt_tune_result_free(&r->runs[i].tune);
        rlt_free(r->runs[i].model.points);
    }
    rlt_free(r->runs);
    rlt_free(r->workloads);
    r->runs = NULL;
    r->workloads = NULL;
    r->n_runs = 0;
}
