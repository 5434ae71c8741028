/*
 * record.c - a tuning record as a value (db.h): its target's fields and the
 * key text they make, the checks a record passes before it is stored, and
 * its JSON form, format v2, written the same way wherever a record is shown
 * (JSON-lines export, `rltune best --json`, `rltune history --json`) and
 * read back in format v2 or v1 (docs/formats.md, "Tuning records").
 *
 * Entry points: rlt_record_target_parse / rlt_record_target_key,
 * rlt_record_problem, rlt_record_to_json, rlt_record_from_json.
 */
#include "db/db.h"

#include "core/json_number.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Whole numbers up to 2^53 are exact in a double (and so in cJSON). */
#define JSON_EXACT_INT_MAX 9007199254740992.0

/* ---- the target ----------------------------------------------------------- */

void rlt_record_target_key(const rlt_record_target *t, rlt_str *out)
{
    rlt_str_printf(out, "cpu=%s;vec=%d;threads=%d", t->cpu, t->vector_floats, t->n_threads);
    if (t->is_weights_prepacked) rlt_str_printf(out, ";weights=%s", rlt_record_weights_text(t));
    if (t->codegen > 0) rlt_str_printf(out, ";codegen=%d", t->codegen);
    rlt_str_printf(out, ";cc=%s", t->cc);
}

const char *rlt_record_weights_text(const rlt_record_target *t)
{
    return !t->is_weights_prepacked ? "timed" : t->is_weights_cold ? "cold" : "prepacked";
}

bool rlt_record_weights_parse(const char *text, size_t len, rlt_record_target *t)
{
#define WEIGHTS_IS(lit) (len == sizeof(lit) - 1 && strncmp(text, lit, len) == 0)
    bool is_known = WEIGHTS_IS("prepacked") || WEIGHTS_IS("cold") || WEIGHTS_IS("timed");
    if (is_known) {
        t->is_weights_prepacked = !WEIGHTS_IS("timed");
        t->is_weights_cold = WEIGHTS_IS("cold");
    }
#undef WEIGHTS_IS
    return is_known;
}

char *rlt_record_target_text(const rlt_record_target *t)
{
    rlt_str s;
    rlt_str_init(&s);
    rlt_record_target_key(t, &s);
    return rlt_str_take(&s); /* NULL when a write failed */
}

bool rlt_record_target_equal(const rlt_record_target *a, const rlt_record_target *b)
{
    return strcmp(a->cpu, b->cpu) == 0 && a->vector_floats == b->vector_floats && a->n_threads == b->n_threads &&
           a->is_weights_prepacked == b->is_weights_prepacked && a->is_weights_cold == b->is_weights_cold &&
           a->codegen == b->codegen &&
           strcmp(a->cc, b->cc) == 0;
}

/* A whole number from lo to hi, all of `text` (a field's value, NUL-ended
 * at `end`). */
static bool parse_int_field(const char *text, const char *end, int lo, int hi, int *out)
{
    char buf[24];
    size_t n = (size_t)(end - text);
    int64_t v;
    if (n == 0 || n >= sizeof buf) return false;
    memcpy(buf, text, n);
    buf[n] = '\0';
    if (!rlt_parse_i64(buf, &v) || v < lo || v > hi) return false;
    *out = (int)v;
    return true;
}

static bool copy_field(const char *text, const char *end, char *dst, size_t cap)
{
    size_t n = (size_t)(end - text);
    if (n >= cap) return false;
    memcpy(dst, text, n);
    dst[n] = '\0';
    return true;
}

rlt_status rlt_record_target_parse(const char *key, rlt_record_target *out, rlt_diag *diag)
{
    RLT_ASSERT(key && out);
    memset(out, 0, sizeof *out);
    bool has_cpu = false, has_vec = false, has_threads = false, has_cc = false;
    const char *p = key;
    while (*p) {
        const char *eq = strchr(p, '=');
        const char *semi = strchr(p, ';');
        if (!eq || (semi && semi < eq))
            return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                            "target key '%.200s': expected NAME=VALUE fields separated by ';' at '%.40s'", key, p);
        size_t name_len = (size_t)(eq - p);
        const char *value = eq + 1;
        /* cc= is the last field and runs to the end: compiler flags may hold ';' */
        bool is_cc = name_len == 2 && strncmp(p, "cc", 2) == 0;
        const char *end = is_cc || !semi ? value + strlen(value) : semi;
        bool is_ok = true, is_repeated = false;
#define NAME_IS(lit) (name_len == sizeof(lit) - 1 && strncmp(p, lit, name_len) == 0)
        if (NAME_IS("cpu")) {
            is_repeated = has_cpu;
            is_ok = copy_field(value, end, out->cpu, sizeof out->cpu) && end > value;
            has_cpu = true;
        } else if (NAME_IS("vec")) {
            is_repeated = has_vec;
            is_ok = parse_int_field(value, end, 1, 1024, &out->vector_floats);
            has_vec = true;
        } else if (NAME_IS("threads")) {
            is_repeated = has_threads;
            is_ok = parse_int_field(value, end, 1, 4096, &out->n_threads);
            has_threads = true;
        } else if (NAME_IS("weights")) {
            is_repeated = out->is_weights_prepacked;
            /* the key leaves "timed" out: a field says prepacked or cold */
            is_ok = rlt_record_weights_parse(value, (size_t)(end - value), out) && out->is_weights_prepacked;
        } else if (NAME_IS("codegen")) {
            is_repeated = out->codegen > 0;
            is_ok = parse_int_field(value, end, 1, INT_MAX, &out->codegen);
        } else if (is_cc) {
            is_ok = copy_field(value, end, out->cc, sizeof out->cc) && end > value;
            has_cc = true;
        } else {
            return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                            "target key '%.200s': unknown field '%.*s' (fields: cpu, vec, threads, weights, codegen, "
                            "cc)",
                            key, (int)RLT_MIN(name_len, 40), p);
        }
#undef NAME_IS
        if (is_repeated)
            return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "target key '%.200s': field '%.*s' appears twice", key,
                            (int)name_len, p);
        if (!is_ok)
            return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "target key '%.200s': bad value for '%.*s': '%.*s'", key,
                            (int)name_len, p, (int)RLT_MIN(end - value, 80), value);
        p = *end ? end + 1 : end;
    }
    const char *missing = !has_cpu ? "cpu" : !has_vec ? "vec" : !has_threads ? "threads" : !has_cc ? "cc" : NULL;
    if (missing)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "target key '%.200s': field '%s' is missing", key, missing);
    return RLT_STATUS_OK;
}

/* ---- checks --------------------------------------------------------------- */

static bool has_nul(const char *field, size_t size) { return memchr(field, '\0', size) != NULL; }

bool rlt_record_problem(const rlt_record *r, char *buf, size_t cap)
{
    struct {
        const char *name;
        const char *field;
        size_t size;
    } texts[] = {
        {"op", r->spec, sizeof r->spec},
        {"target.cpu", r->target.cpu, sizeof r->target.cpu},
        {"target.cc", r->target.cc, sizeof r->target.cc},
        {"config", r->config, sizeof r->config},
        {"schedule", r->schedule, sizeof r->schedule},
        {"tuner", r->tuner, sizeof r->tuner},
        {"message", r->message, sizeof r->message},
    };
    for (size_t i = 0; i < RLT_ARRAY_LEN(texts); i++)
        if (!has_nul(texts[i].field, texts[i].size)) {
            snprintf(buf, cap, "field '%s' has no terminating NUL within its %zu bytes", texts[i].name,
                     texts[i].size);
            return true;
        }
    struct {
        const char *name;
        double v;
    } reals[] = {{"time_ms.min", r->time_min_ms},
                 {"time_ms.median", r->time_median_ms},
                 {"gflops", r->gflops},
                 {"build_s", r->build_s},
                 {"created_s", r->created_s}};
    for (size_t i = 0; i < RLT_ARRAY_LEN(reals); i++)
        if (!isfinite(reals[i].v)) {
            snprintf(buf, cap, "field '%s' is %g, not a finite number", reals[i].name, reals[i].v);
            return true;
        }
    if (!r->spec[0]) {
        snprintf(buf, cap, "field 'op' is empty");
        return true;
    }
    if ((int)r->status < 0 || r->status >= RLT_STATUS_COUNT) {
        snprintf(buf, cap, "field 'status' is %d, not a status", (int)r->status);
        return true;
    }
    const rlt_record_target *t = &r->target;
    if (!t->cpu[0] || strchr(t->cpu, ';') || !t->cc[0] || t->vector_floats < 1 || t->n_threads < 1 ||
        t->codegen < 0) {
        snprintf(buf, cap,
                 "field 'target' is incomplete (cpu without ';', vector_floats and threads >= 1, codegen >= 0 "
                 "and cc are required)");
        return true;
    }
    return false;
}

/* ---- JSON, format v2 -------------------------------------------------------- */

/* Numbers are written exactly (json_number.h), not by cJSON's printer. */
static bool add_real(cJSON *o, const char *name, double v) { return rlt_json_add_number(o, name, v) != NULL; }

static bool add_int(cJSON *o, const char *name, int64_t v)
{
    char num[24];
    snprintf(num, sizeof num, "%" PRId64, v);
    return cJSON_AddRawToObject(o, name, num) != NULL;
}

void rlt_record_to_json(const rlt_record *r, rlt_str *out)
{
    char seed[24];
    snprintf(seed, sizeof seed, "%" PRIu64, r->seed);
    cJSON *o = cJSON_CreateObject();
    cJSON *t = NULL, *times = NULL;
    bool is_ok = o && add_int(o, "v", RLT_RECORD_JSON_VERSION) && add_int(o, "id", r->id) &&
                 cJSON_AddStringToObject(o, "op", r->spec) && (t = cJSON_AddObjectToObject(o, "target")) &&
                 cJSON_AddStringToObject(t, "cpu", r->target.cpu) &&
                 add_int(t, "vector_floats", r->target.vector_floats) && add_int(t, "threads", r->target.n_threads) &&
                 cJSON_AddStringToObject(t, "weights", rlt_record_weights_text(&r->target)) &&
                 add_int(t, "codegen", r->target.codegen) && cJSON_AddStringToObject(t, "cc", r->target.cc) &&
                 cJSON_AddStringToObject(o, "config", r->config) &&
                 cJSON_AddStringToObject(o, "schedule", r->schedule) &&
                 cJSON_AddStringToObject(o, "tuner", r->tuner) &&
                 cJSON_AddStringToObject(o, "status", rlt_status_str(r->status)) &&
                 cJSON_AddBoolToObject(o, "final", r->is_final) && (times = cJSON_AddObjectToObject(o, "time_ms")) &&
                 add_real(times, "min", r->time_min_ms) && add_real(times, "median", r->time_median_ms) &&
                 add_real(o, "gflops", r->gflops) && cJSON_AddStringToObject(o, "seed", seed) &&
                 add_real(o, "build_s", r->build_s) && add_real(o, "created_s", r->created_s) &&
                 cJSON_AddStringToObject(o, "message", r->message);
    char *text = is_ok ? cJSON_PrintUnformatted(o) : NULL;
    if (text)
        rlt_str_append(out, text);
    else
        out->has_failed = true;
    cJSON_free(text);
    cJSON_Delete(o);
}

char *rlt_record_json(const rlt_record *r)
{
    rlt_str s;
    rlt_str_init(&s);
    rlt_record_to_json(r, &s);
    return rlt_str_take(&s); /* NULL when a write failed */
}

/* ---- reading JSON, format v2 or v1 ------------------------------------------ */

/* A JSON number that is a whole number in [lo, hi]. */
static bool json_whole(const cJSON *item, double lo, double hi, double *out)
{
    if (!cJSON_IsNumber(item)) return false;
    double d = item->valuedouble;
    if (!(d >= lo && d <= hi) || d != floor(d)) return false;
    *out = d;
    return true;
}

/* The seed: a string of 1 to 20 decimal digits that fits 64 bits, or (as a
 * hand-written file may have it) a whole JSON number up to 2^53. */
static bool json_seed(const cJSON *item, uint64_t *out)
{
    double d;
    if (json_whole(item, 0, JSON_EXACT_INT_MAX, &d)) {
        *out = (uint64_t)d;
        return true;
    }
    if (!cJSON_IsString(item)) return false;
    return rlt_parse_u64(item->valuestring, out);
}

/* True when the text has the escape \u0000 (outside another escape). cJSON
 * decodes it to a NUL byte inside the string, which would cut the field
 * short without a word; such a record is refused instead. */
static bool has_escaped_nul(const char *text)
{
    for (const char *p = text; *p; p++) {
        if (*p != '\\') continue;
        if (p[1] == 'u' && strncmp(p + 2, "0000", 4) == 0) return true;
        if (p[1]) p++; /* skip the escaped character, so "\\u0000" is text */
    }
    return false;
}

/* How one member of a record object is read. */
typedef enum member_kind {
    MEMBER_ID,     /* int64_t, whole, >= 0 */
    MEMBER_TEXT,   /* char[size] */
    MEMBER_REAL,   /* double, finite */
    MEMBER_INT,    /* int, whole, from 0 (v1's n_threads: read and checked, not kept) */
    MEMBER_COUNT,  /* int, whole, >= 1 */
    MEMBER_SEED,   /* uint64_t */
    MEMBER_STATUS, /* rlt_status, by name */
    MEMBER_BOOL,   /* bool */
    MEMBER_WEIGHTS /* the whole rlt_record_target's weights fields: "prepacked", "cold" or "timed" */
} member_kind;

typedef struct member_desc {
    const char *name;
    member_kind kind;
    size_t offset; /* in the struct the object is read into */
    size_t size;
} member_desc;

#define REC(kind, name, member) {name, kind, offsetof(rlt_record, member), sizeof(((rlt_record *)0)->member)}
#define TGT(kind, name, member) \
    {name, kind, offsetof(rlt_record_target, member), sizeof(((rlt_record_target *)0)->member)}
#define TIMES(name, member) {name, MEMBER_REAL, offsetof(rlt_record, member), sizeof(double)}

static const member_desc k_v2_record[] = {
    REC(MEMBER_ID, "id", id),
    REC(MEMBER_TEXT, "op", spec),
    {"target", MEMBER_TEXT, 0, 0}, /* an object: k_v2_target */
    REC(MEMBER_TEXT, "config", config),
    REC(MEMBER_TEXT, "schedule", schedule),
    REC(MEMBER_TEXT, "tuner", tuner),
    REC(MEMBER_STATUS, "status", status),
    REC(MEMBER_BOOL, "final", is_final),
    {"time_ms", MEMBER_REAL, 0, 0}, /* an object: k_v2_times */
    REC(MEMBER_REAL, "gflops", gflops),
    REC(MEMBER_SEED, "seed", seed),
    REC(MEMBER_REAL, "build_s", build_s),
    REC(MEMBER_REAL, "created_s", created_s),
    REC(MEMBER_TEXT, "message", message),
};

static const member_desc k_v2_target[] = {
    TGT(MEMBER_TEXT, "cpu", cpu),
    TGT(MEMBER_COUNT, "vector_floats", vector_floats),
    TGT(MEMBER_COUNT, "threads", n_threads),
    {"weights", MEMBER_WEIGHTS, 0, sizeof(rlt_record_target)},
    TGT(MEMBER_INT, "codegen", codegen),
    TGT(MEMBER_TEXT, "cc", cc),
};

static const member_desc k_v2_times[] = {TIMES("min", time_min_ms), TIMES("median", time_median_ms)};

/* v1's flat record: the target is its key text, status a name, n_threads
 * repeats the target's. */
typedef struct v1_extra {
    char target[512];
    int n_threads;
} v1_extra;
#define V1X(kind, name, member) {name, kind, offsetof(v1_extra, member), sizeof(((v1_extra *)0)->member)}

static const member_desc k_v1_record[] = {
    REC(MEMBER_ID, "id", id),
    REC(MEMBER_TEXT, "spec", spec),
    {"target", MEMBER_TEXT, 0, 0}, /* read into v1_extra */
    REC(MEMBER_TEXT, "config", config),
    REC(MEMBER_TEXT, "schedule", schedule),
    REC(MEMBER_TEXT, "tuner", tuner),
    REC(MEMBER_STATUS, "status", status),
    REC(MEMBER_REAL, "time_min_ms", time_min_ms),
    REC(MEMBER_REAL, "time_median_ms", time_median_ms),
    REC(MEMBER_REAL, "gflops", gflops),
    {"n_threads", MEMBER_INT, 0, 0}, /* read into v1_extra */
    REC(MEMBER_SEED, "seed", seed),
    REC(MEMBER_REAL, "build_s", build_s),
    REC(MEMBER_REAL, "created_s", created_s),
    REC(MEMBER_TEXT, "message", message),
};
static const member_desc k_v1_extra[] = {V1X(MEMBER_TEXT, "target", target), V1X(MEMBER_INT, "n_threads", n_threads)};

/* The list of an object's member names, for messages: "id, op, target". */
static void member_names(const member_desc *members, size_t n, const char *lead, char *buf, size_t cap)
{
    size_t used = (size_t)snprintf(buf, cap, "%s", lead);
    for (size_t i = 0; i < n && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", members[i].name);
}

static const member_desc *member_find(const member_desc *members, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(members[i].name, name) == 0) return &members[i];
    return NULL;
}

/* Checks that `obj` has no member outside `members` (and `extra`, a name
 * allowed besides them, may be NULL) and none twice. `path` names the object
 * in messages ("", "target."). */
static rlt_status check_members(const cJSON *obj, const member_desc *members, size_t n, const char *extra,
                                const char *where, const char *path, rlt_diag *diag)
{
    for (const cJSON *item = obj->child; item; item = item->next) {
        if (!member_find(members, n, item->string) && !(extra && strcmp(item->string, extra) == 0)) {
            char names[512], lead[40] = "";
            if (extra) snprintf(lead, sizeof lead, "%s, ", extra);
            member_names(members, n, lead, names, sizeof names);
            return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s: unknown field \"%s%s\" (expected %s)", where, path,
                            item->string, names);
        }
        for (const cJSON *prev = obj->child; prev != item; prev = prev->next)
            if (strcmp(prev->string, item->string) == 0)
                return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s: field \"%s%s\" appears twice", where, path,
                                item->string);
    }
    return RLT_STATUS_OK;
}

/* Reads member `m` of `obj` into base + m->offset. */
static rlt_status read_member(const cJSON *obj, const member_desc *m, void *base, const char *where, const char *path,
                              rlt_diag *diag)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, m->name);
    void *dst = (char *)base + m->offset;
    const char *expected = NULL;
    double d = 0;
    if (!item) return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s: missing field \"%s%s\"", where, path, m->name);
    switch (m->kind) {
    case MEMBER_ID:
        if (json_whole(item, 0, JSON_EXACT_INT_MAX, &d)) *(int64_t *)dst = (int64_t)d;
        else expected = "a whole number >= 0";
        break;
    case MEMBER_INT:
        if (json_whole(item, 0, INT_MAX, &d)) *(int *)dst = (int)d;
        else expected = "a whole number from 0 to 2147483647";
        break;
    case MEMBER_COUNT:
        if (json_whole(item, 1, INT_MAX, &d)) *(int *)dst = (int)d;
        else expected = "a whole number from 1 to 2147483647";
        break;
    case MEMBER_REAL:
        if (cJSON_IsNumber(item) && isfinite(item->valuedouble)) *(double *)dst = item->valuedouble;
        else expected = "a finite number";
        break;
    case MEMBER_SEED:
        if (!json_seed(item, (uint64_t *)dst)) expected = "a string of decimal digits below 2^64";
        break;
    case MEMBER_BOOL:
        if (cJSON_IsBool(item)) *(bool *)dst = cJSON_IsTrue(item);
        else expected = "true or false";
        break;
    case MEMBER_WEIGHTS:
        if (!cJSON_IsString(item) ||
            !rlt_record_weights_parse(item->valuestring, strlen(item->valuestring), (rlt_record_target *)dst))
            expected = "\"prepacked\", \"cold\" or \"timed\"";
        break;
    case MEMBER_STATUS: {
        rlt_status s = cJSON_IsString(item) ? rlt_status_from_str(item->valuestring) : RLT_STATUS_COUNT;
        if (s != RLT_STATUS_COUNT) {
            *(rlt_status *)dst = s;
            break;
        }
        char names[400];
        size_t used = (size_t)snprintf(names, sizeof names, "a status name (");
        for (int i = 0; i < RLT_STATUS_COUNT && used < sizeof names; i++)
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "",
                                     rlt_status_str((rlt_status)i));
        if (used < sizeof names) snprintf(names + used, sizeof names - used, ")");
        if (cJSON_IsString(item))
            return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s: field \"%s%s\" is '%.40s', not %s", where, path,
                            m->name, item->valuestring, names);
        expected = "a status name";
        break;
    }
    case MEMBER_TEXT: {
        if (!cJSON_IsString(item)) {
            expected = "a string";
            break;
        }
        size_t len = strlen(item->valuestring);
        if (len >= m->size)
            return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                            "%s: field \"%s%s\" is %zu bytes long; rltune records hold at most %zu (it was not cut)",
                            where, path, m->name, len, m->size - 1);
        memcpy(dst, item->valuestring, len + 1);
        break;
    }
    }
    if (expected)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s: field \"%s%s\" must be %s", where, path, m->name,
                        expected);
    return RLT_STATUS_OK;
}

/* Reads every member of `members` from `obj`, an object checked to have no
 * other ones (but `extra`). Entries of size 0 are the caller's to read. */
static rlt_status read_object(const cJSON *obj, const member_desc *members, size_t n, const char *extra, void *base,
                              const char *where, const char *path, rlt_diag *diag)
{
    if (!cJSON_IsObject(obj))
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s: field \"%.*s\" must be an object", where,
                        (int)strlen(path) - 1, path);
    rlt_status st = check_members(obj, members, n, extra, where, path, diag);
    for (size_t i = 0; i < n && st == RLT_STATUS_OK; i++) {
        if (members[i].size == 0) {
            if (!cJSON_GetObjectItemCaseSensitive(obj, members[i].name))
                st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s: missing field \"%s%s\"", where, path,
                              members[i].name);
            continue;
        }
        st = read_member(obj, &members[i], base, where, path, diag);
    }
    return st;
}

static rlt_status read_v2(const cJSON *obj, const char *where, rlt_record *out, rlt_diag *diag)
{
    rlt_status st = read_object(obj, k_v2_record, RLT_ARRAY_LEN(k_v2_record), "v", out, where, "", diag);
    if (st == RLT_STATUS_OK)
        st = read_object(cJSON_GetObjectItemCaseSensitive(obj, "target"), k_v2_target, RLT_ARRAY_LEN(k_v2_target),
                         NULL, &out->target, where, "target.", diag);
    if (st == RLT_STATUS_OK)
        st = read_object(cJSON_GetObjectItemCaseSensitive(obj, "time_ms"), k_v2_times, RLT_ARRAY_LEN(k_v2_times),
                         NULL, out, where, "time_ms.", diag);
    return st;
}

static rlt_status read_v1(const cJSON *obj, const char *where, rlt_record *out, rlt_diag *diag)
{
    v1_extra x = {0};
    rlt_status st = read_object(obj, k_v1_record, RLT_ARRAY_LEN(k_v1_record), "v", out, where, "", diag);
    for (size_t i = 0; i < RLT_ARRAY_LEN(k_v1_extra) && st == RLT_STATUS_OK; i++)
        st = read_member(obj, &k_v1_extra[i], &x, where, "", diag);
    if (st == RLT_STATUS_OK && (st = rlt_record_target_parse(x.target, &out->target, diag)) != RLT_STATUS_OK)
        rlt_diag_prefix(diag, "%s: field \"target\"", where);
    /* format v1 marked a final pick's re-measurement by its message */
    out->is_final = strncmp(out->message, RLT_RECORD_V1_FINAL_PREFIX, strlen(RLT_RECORD_V1_FINAL_PREFIX)) == 0;
    return st;
}

rlt_status rlt_record_from_json(const char *text, const char *where, rlt_record *out, rlt_diag *diag)
{
    RLT_ASSERT(text && where && out);
    const char *end = NULL;
    rlt_status st = RLT_STATUS_OK;
    memset(out, 0, sizeof *out);
    cJSON *json = cJSON_ParseWithOpts(text, &end, true);
    if (!json) {
        /* cJSON answers an allocation failure as it answers bad syntax: the
         * two cannot be told apart here. */
        long col = end && end >= text ? (long)(end - text) + 1 : 1;
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s:%ld: not valid JSON (expected one record object a line)",
                      where, col);
        goto cleanup;
    }
    if (has_escaped_nul(text)) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                      "%s: a string holds \\u0000 (a NUL character), which record fields cannot hold", where);
        goto cleanup;
    }
    if (!cJSON_IsObject(json)) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s: expected a JSON object (one record a line)", where);
        goto cleanup;
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(json, "v");
    double version = 0;
    if (!v) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s: missing field \"v\" (the format version, %d)", where,
                      RLT_RECORD_JSON_VERSION);
        goto cleanup;
    }
    if (!json_whole(v, 0, JSON_EXACT_INT_MAX, &version) || (version != 1 && version != RLT_RECORD_JSON_VERSION)) {
        char shown[64] = "not a whole number";
        if (cJSON_IsNumber(v)) snprintf(shown, sizeof shown, "%g", v->valuedouble);
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                      "%s: unknown records format version \"v\": %s (this rltune reads versions 1 and %d)", where,
                      shown, RLT_RECORD_JSON_VERSION);
        goto cleanup;
    }
    st = version == 1 ? read_v1(json, where, out, diag) : read_v2(json, where, out, diag);
    char problem[512];
    if (st == RLT_STATUS_OK && rlt_record_problem(out, problem, sizeof problem))
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s: %s", where, problem);
cleanup:
    cJSON_Delete(json);
    return st;
}
