/*
 * space.c - the public face of knob spaces and of measuring configurations
 * (rltune/space.h): a thin layer over space/space.h (the space a session
 * makes, keys, validity, neighbours, seeds) and the session's measurers
 * (search/session.h: live, recorded; search/replay.h: replay). Entry
 * points: rlt_knob_space_create / _open_dataset, rlt_knob_space_nearest_valid,
 * rlt_config_measurer_create_live / _create_replay, rlt_config_measure.
 */
#include "rltune/space.h"

#include "search/dataset.h"
#include "search/replay.h"
#include "search/tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(RLT_KNOB_SPACE_MAX_KNOBS == RLT_SPACE_MAX_KNOBS, "rltune/space.h's knob limit is space.h's");
_Static_assert(RLT_KNOB_SPACE_MAX_CHOICES == RLT_SPACE_MAX_CHOICES, "rltune/space.h's choice limit is space.h's");

struct rlt_knob_space {
    rlt_op *op;          /* owned: a copy of the caller's, or the dataset's */
    rlt_space full;      /* unrestricted: validity, keys, live measurement */
    rlt_replay *replay;  /* owned; NULL for an op's space */
    char *choice_texts;  /* owned: every choice's text, NUL-separated */
    const char *choice[RLT_SPACE_MAX_KNOBS][RLT_SPACE_MAX_CHOICES]; /* into choice_texts */
    char last_error[1024];
};

struct rlt_config_measurer {
    const rlt_knob_space *space; /* borrowed */
    rlt_measurer *inner;         /* owned */
    rlt_db *db;                  /* owned; live with db_path only */
    rlt_replay *replay;          /* owned when opened from a path, else NULL */
    const rlt_replay *replay_in_use;
    char *strings;               /* owned: the copied option strings */
    bool is_replay;
    double best_gflops;
    rlt_trial *trials;           /* scratch, cap of them */
    int *slot;
    int cap;
    char last_error[1024];
};

/* src (NULL: "") into dst, cut to fit: messages may be longer than a result keeps. */
static void copy_text(char *dst, size_t cap, const char *src)
{
    size_t n = src ? strlen(src) : 0;
    if (n >= cap) n = cap - 1;
    if (n) memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Keeps a failure's message in `last` and passes st on. */
static rlt_status keep(char *last, size_t cap, rlt_status st, const rlt_diag *d)
{
    return rlt_diag_keep(last, cap, st, d, NULL);
}

/* ---- the knob space -------------------------------------------------------------- */

/* Every choice's text into one block, pointed at by s->choice. */
static rlt_status name_choices(rlt_knob_space *s, rlt_diag *diag)
{
    rlt_str all, one;
    rlt_str_init(&all);
    rlt_str_init(&one);
    size_t offset[RLT_SPACE_MAX_KNOBS][RLT_SPACE_MAX_CHOICES];
    for (int k = 0; k < s->full.n_knobs; k++) {
        const rlt_knob *knob = &s->full.knobs[k];
        for (int c = 0; c < knob->n_choices; c++) {
            rlt_str_clear(&one);
            rlt_knob_value_text(&s->full, knob, c, &one);
            offset[k][c] = all.len;
            rlt_str_append(&all, one.data ? one.data : "");
            rlt_str_appendn(&all, "", 1);
        }
    }
    rlt_str_free(&one);
    if (all.has_failed || !all.data) {
        rlt_str_free(&all);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory naming the knobs' choices");
    }
    s->choice_texts = all.data; /* the block, NULs inside: not rlt_str_take (which keeps data too) */
    for (int k = 0; k < s->full.n_knobs; k++)
        for (int c = 0; c < s->full.knobs[k].n_choices; c++) s->choice[k][c] = s->choice_texts + offset[k][c];
    return RLT_STATUS_OK;
}

rlt_status rlt_knob_space_create(const rlt_op *op, int n_threads, rlt_knob_space **out, rlt_diag *diag)
{
    rlt_diag local = {0};
    rlt_diag *d = diag ? diag : &local;
    *out = NULL;
    if (!op) return rlt_fail(d, RLT_STATUS_INVALID_ARGUMENT, "rlt_knob_space_create: no op");
    if (n_threads < 1 || n_threads > RLT_MAX_THREADS)
        return rlt_fail(d, RLT_STATUS_INVALID_ARGUMENT, "n_threads is %d: expected 1 to %d", n_threads,
                        RLT_MAX_THREADS);
    rlt_knob_space *s = rlt_calloc(1, sizeof *s);
    if (!s) return rlt_fail(d, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a knob space");
    /* the space tune.c makes: the thread count given, the rest detected */
    rlt_space_opts so = {.n_threads = n_threads};
    rlt_status st = rlt_op_parse(rlt_op_spec(op), &s->op, d);
    if (st == RLT_STATUS_OK) st = rlt_space_create(s->op, &so, &s->full, d);
    if (st == RLT_STATUS_OK) st = name_choices(s, d);
    if (st != RLT_STATUS_OK) {
        rlt_knob_space_destroy(s);
        return st;
    }
    *out = s;
    return RLT_STATUS_OK;
}

rlt_status rlt_knob_space_open_dataset(const char *path, rlt_knob_space **out, rlt_diag *diag)
{
    rlt_diag local = {0};
    rlt_diag *d = diag ? diag : &local;
    *out = NULL;
    if (!path) return rlt_fail(d, RLT_STATUS_INVALID_ARGUMENT, "rlt_knob_space_open_dataset: no path");
    rlt_db *db = NULL;
    rlt_dataset_info info;
    bool is_dataset = false;
    rlt_knob_space *s = rlt_calloc(1, sizeof *s);
    rlt_status st = RLT_STATUS_OK;
    if (!s) {
        st = rlt_fail(d, RLT_STATUS_OUT_OF_MEMORY, "out of memory opening dataset '%s'", path);
        goto cleanup;
    }
    /* the description names the op; the replay then checks everything else */
    if ((st = rlt_db_open(path, &(rlt_db_opts){.is_read_only = true}, &db, d)) != RLT_STATUS_OK) goto cleanup;
    if ((st = rlt_dataset_info_get(db, path, &info, &is_dataset, d)) != RLT_STATUS_OK) goto cleanup;
    if (!is_dataset) {
        st = rlt_fail(d, RLT_STATUS_INVALID_ARGUMENT,
                      "'%s' is a records database but not a dataset (it has no dataset description): make one "
                      "with 'rltune dataset --op SPEC --out FILE'",
                      path);
        goto cleanup;
    }
    if ((st = rlt_op_parse(info.spec, &s->op, d)) != RLT_STATUS_OK) {
        rlt_diag_prefix(d, "dataset '%s'", path);
        goto cleanup;
    }
    if ((st = rlt_replay_open(path, s->op, NULL, &s->replay, d)) != RLT_STATUS_OK) goto cleanup;
    s->full = *rlt_replay_space(s->replay);
    rlt_space_restrict(&s->full, NULL);
    if ((st = name_choices(s, d)) != RLT_STATUS_OK) goto cleanup;
    *out = s;
    s = NULL;
cleanup:
    rlt_db_close(db);
    rlt_knob_space_destroy(s);
    return st;
}

void rlt_knob_space_destroy(rlt_knob_space *s)
{
    if (!s) return;
    rlt_replay_close(s->replay);
    rlt_op_destroy(s->op);
    rlt_free(s->choice_texts);
    rlt_free(s);
}

const char *rlt_knob_space_last_error(const rlt_knob_space *s) { return s->last_error; }
const rlt_op *rlt_knob_space_op(const rlt_knob_space *s) { return s->op; }
int rlt_knob_space_n_threads(const rlt_knob_space *s) { return s->full.n_threads; }
int rlt_knob_space_n_knobs(const rlt_knob_space *s) { return s->full.n_knobs; }

const char *rlt_knob_space_knob_name(const rlt_knob_space *s, int knob)
{
    return knob >= 0 && knob < s->full.n_knobs ? s->full.knobs[knob].name : NULL;
}

int rlt_knob_space_n_choices(const rlt_knob_space *s, int knob)
{
    return knob >= 0 && knob < s->full.n_knobs ? s->full.knobs[knob].n_choices : 0;
}

const char *rlt_knob_space_choice_text(const rlt_knob_space *s, int knob, int choice)
{
    if (knob < 0 || knob >= s->full.n_knobs || choice < 0 || choice >= s->full.knobs[knob].n_choices) return NULL;
    return s->choice[knob][choice];
}

uint64_t rlt_knob_space_size(const rlt_knob_space *s) { return rlt_space_size(&s->full); }

/* The public int array as a configuration; false (with the knob in
 * *out_bad) when a choice is out of its knob's range. */
static bool config_of_ints(const rlt_space *sp, const int *in, rlt_config *out, int *out_bad)
{
    memset(out, 0, sizeof *out);
    for (int k = 0; k < sp->n_knobs; k++) {
        if (in[k] < 0 || in[k] >= sp->knobs[k].n_choices) {
            if (out_bad) *out_bad = k;
            return false;
        }
        out->choice[k] = (int16_t)in[k];
    }
    return true;
}

static void ints_of_config(const rlt_space *sp, const rlt_config *c, int *out)
{
    for (int k = 0; k < sp->n_knobs; k++) out[k] = c->choice[k];
}

static rlt_status out_of_range(const rlt_space *sp, const int *in, int knob, const char *what, rlt_diag *diag)
{
    return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%sknob %d (%s) has choice %d: expected 0 to %d", what, knob,
                    sp->knobs[knob].name, in[knob], sp->knobs[knob].n_choices - 1);
}

rlt_status rlt_knob_space_config_key(rlt_knob_space *s, const int *config, char **out, rlt_diag *diag)
{
    rlt_diag local = {0};
    rlt_diag *d = diag ? diag : &local;
    *out = NULL;
    rlt_config c;
    int bad = 0;
    if (!config_of_ints(&s->full, config, &c, &bad))
        return keep(s->last_error, sizeof s->last_error, out_of_range(&s->full, config, bad, "", d), d);
    rlt_str key;
    rlt_str_init(&key);
    rlt_space_config_key(&s->full, &c, &key);
    *out = rlt_str_take(&key);
    if (!*out)
        return keep(s->last_error, sizeof s->last_error,
                    rlt_fail(d, RLT_STATUS_OUT_OF_MEMORY, "out of memory writing a configuration key"), d);
    return RLT_STATUS_OK;
}

rlt_status rlt_knob_space_config_parse(rlt_knob_space *s, const char *key, int *out, rlt_diag *diag)
{
    rlt_diag local = {0};
    rlt_diag *d = diag ? diag : &local;
    rlt_config c;
    if (!key)
        return keep(s->last_error, sizeof s->last_error,
                    rlt_fail(d, RLT_STATUS_INVALID_ARGUMENT, "rlt_knob_space_config_parse: no key"), d);
    rlt_status st = rlt_space_config_parse(&s->full, key, &c, d);
    if (st == RLT_STATUS_OK) ints_of_config(&s->full, &c, out);
    return keep(s->last_error, sizeof s->last_error, st, d);
}

bool rlt_knob_space_is_valid(const rlt_knob_space *s, const int *config)
{
    rlt_config c;
    return config_of_ints(&s->full, config, &c, NULL) && rlt_space_is_valid(&s->full, &c);
}

/* Why a configuration (choices in range) is invalid, into diag: the
 * failure of making its nest (what rlt_space_is_valid asks). */
static rlt_status reason_invalid(const rlt_space *sp, const rlt_config *c, rlt_diag *diag)
{
    rlt_nest nest;
    rlt_status st = rlt_space_nest(sp, c, &nest, NULL, diag);
    if (st == RLT_STATUS_OK) st = rlt_fail(diag, RLT_STATUS_INTERNAL, "a valid configuration asked why it is invalid");
    return st;
}

rlt_status rlt_knob_space_config_check(rlt_knob_space *s, const int *config, rlt_diag *diag)
{
    rlt_diag local = {0};
    rlt_diag *d = diag ? diag : &local;
    rlt_config c;
    int bad = 0;
    if (!config_of_ints(&s->full, config, &c, &bad))
        return keep(s->last_error, sizeof s->last_error, out_of_range(&s->full, config, bad, "", d), d);
    if (rlt_space_is_valid(&s->full, &c)) return RLT_STATUS_OK;
    return keep(s->last_error, sizeof s->last_error, reason_invalid(&s->full, &c, d), d);
}

/* What nearest_valid looks for: valid, and measured for a dataset's space. */
static bool is_wanted(const rlt_knob_space *s, const rlt_config *c)
{
    return rlt_space_is_valid(&s->full, c) && (!s->replay || rlt_replay_find(s->replay, c));
}

int rlt_knob_space_nearest_valid(const rlt_knob_space *s, const int *from, int *out)
{
    const rlt_space *sp = &s->full;
    rlt_config start, one, two;
    if (!config_of_ints(sp, from, &start, NULL)) {
        /* out of range: clamp first */
        for (int k = 0; k < sp->n_knobs; k++)
            start.choice[k] = (int16_t)RLT_MAX(0, RLT_MIN(from[k], sp->knobs[k].n_choices - 1));
    }
    if (is_wanted(s, &start)) {
        ints_of_config(sp, &start, out);
        return 0;
    }
    for (int k = 0; k < sp->n_knobs; k++)
        for (int delta = -1; delta <= 1; delta += 2)
            if (rlt_space_neighbour(sp, &start, k, delta, &one) && is_wanted(s, &one)) {
                ints_of_config(sp, &one, out);
                return 1;
            }
    for (int k = 0; k < sp->n_knobs; k++)
        for (int delta = -1; delta <= 1; delta += 2) {
            if (!rlt_space_neighbour(sp, &start, k, delta, &one)) continue;
            for (int k2 = 0; k2 < sp->n_knobs; k2++)
                for (int delta2 = -1; delta2 <= 1; delta2 += 2) {
                    if (k2 == k && delta2 == -delta) continue; /* back to the start */
                    if (rlt_space_neighbour(sp, &one, k2, delta2, &two) && is_wanted(s, &two)) {
                        ints_of_config(sp, &two, out);
                        return 2;
                    }
                }
        }
    if (s->replay) {
        /* the measured configuration fewest choice steps away */
        const rlt_space *members = rlt_replay_space(s->replay);
        uint64_t n = rlt_space_size(members);
        long best_distance = -1;
        rlt_config c, best = start;
        for (uint64_t i = 0; i < n; i++) {
            rlt_space_config_of(members, i, &c);
            long distance = 0;
            for (int k = 0; k < sp->n_knobs; k++) distance += labs((long)c.choice[k] - start.choice[k]);
            if (rlt_space_is_valid(sp, &c) && (best_distance < 0 || distance < best_distance)) {
                best_distance = distance;
                best = c;
            }
        }
        ints_of_config(sp, &best, out);
        return -1;
    }
    rlt_config seed = start;
    rlt_space_seeds(sp, 1, &seed); /* leaves `start` in place when out of memory */
    ints_of_config(sp, &seed, out);
    return -1;
}

int rlt_knob_space_median(const rlt_knob_space *s, int *out)
{
    int middle[RLT_SPACE_MAX_KNOBS];
    for (int k = 0; k < s->full.n_knobs; k++) middle[k] = (s->full.knobs[k].n_choices - 1) / 2;
    return rlt_knob_space_nearest_valid(s, middle, out);
}

int rlt_knob_space_dataset_size(const rlt_knob_space *s)
{
    return s->replay ? (int)rlt_space_size(rlt_replay_space(s->replay)) : 0;
}

rlt_status rlt_knob_space_dataset_config(rlt_knob_space *s, int i, int *out, rlt_diag *diag)
{
    rlt_diag local = {0};
    rlt_diag *d = diag ? diag : &local;
    int n = rlt_knob_space_dataset_size(s);
    if (i < 0 || i >= n)
        return keep(s->last_error, sizeof s->last_error,
                    rlt_fail(d, RLT_STATUS_INVALID_ARGUMENT, "dataset configuration %d: expected 0 to %d%s", i,
                             n - 1, s->replay ? "" : " (the space is an op's, not a dataset's)"),
                    d);
    rlt_config c;
    rlt_space_config_of(rlt_replay_space(s->replay), (uint64_t)i, &c);
    ints_of_config(&s->full, &c, out);
    return RLT_STATUS_OK;
}

bool rlt_knob_space_in_dataset(const rlt_knob_space *s, const int *config)
{
    rlt_config c;
    return s->replay && config_of_ints(&s->full, config, &c, NULL) && rlt_replay_find(s->replay, &c) != NULL;
}

/* ---- measuring configurations ---------------------------------------------------------- */

void rlt_config_measurer_options_init(rlt_config_measurer_options *o) { memset(o, 0, sizeof *o); }

/* Copies the option strings the live measurer keeps (the build's) into
 * one block owned by m, and points `build` at the copies. */
static rlt_status copy_build_strings(rlt_config_measurer *m, rlt_build_opts *build, rlt_diag *diag)
{
    const char **fields[] = {&build->cc, &build->cflags, &build->cache_dir};
    size_t len = 1;
    for (size_t i = 0; i < RLT_ARRAY_LEN(fields); i++)
        if (*fields[i]) len += strlen(*fields[i]) + 1;
    char *next = m->strings = rlt_malloc(len);
    if (!next) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a measurer");
    for (size_t i = 0; i < RLT_ARRAY_LEN(fields); i++) {
        if (!*fields[i]) continue;
        size_t n = strlen(*fields[i]) + 1;
        memcpy(next, *fields[i], n);
        *fields[i] = next;
        next += n;
    }
    return RLT_STATUS_OK;
}

/* The records database of a live measurer; a dataset is refused. */
static rlt_status open_records(const char *path, rlt_db **out, rlt_diag *diag)
{
    return rlt_dataset_refusing_open(
        path, "replay it (rlt_config_measurer_create_replay), or store into another database", out, diag);
}

rlt_status rlt_config_measurer_create_live(const rlt_knob_space *space, const rlt_config_measurer_options *opts,
                                           rlt_config_measurer **out, rlt_diag *diag)
{
    rlt_diag local = {0};
    rlt_diag *d = diag ? diag : &local;
    *out = NULL;
    rlt_config_measurer_options o;
    if (opts) o = *opts;
    else rlt_config_measurer_options_init(&o);
    rlt_config_measurer *m = rlt_calloc(1, sizeof *m);
    if (!m) return rlt_fail(d, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a measurer");
    m->space = space;
    rlt_record_target target;
    rlt_build_opts build = o.build;
    rlt_status st = copy_build_strings(m, &build, d);
    if (st == RLT_STATUS_OK) st = rlt_session_target(&build, space->full.n_threads, &target, d);
    target.is_weights_cold = o.run.cold_weights;
    if (st == RLT_STATUS_OK && o.db_path) st = open_records(o.db_path, &m->db, d);
    if (st == RLT_STATUS_OK)
        st = rlt_measurer_live_create(space->op, &space->full, &target, &build, &o.run, o.tuner ? o.tuner : "knobs",
                                      o.seed, &m->inner, d);
    if (st == RLT_STATUS_OK && m->db)
        st = rlt_measurer_recorded_create(m->db, space->op, &space->full, &target, NULL, m->inner, &m->inner, d);
    if (st != RLT_STATUS_OK) {
        rlt_config_measurer_destroy(m);
        return st;
    }
    *out = m;
    return RLT_STATUS_OK;
}

/* Whether two spaces have the same knobs with the same choices. */
static bool same_knobs(const rlt_space *a, const rlt_space *b)
{
    if (a->n_knobs != b->n_knobs) return false;
    for (int k = 0; k < a->n_knobs; k++) {
        const rlt_knob *x = &a->knobs[k], *y = &b->knobs[k];
        if (strcmp(x->name, y->name) != 0 || x->kind != y->kind || x->n_choices != y->n_choices ||
            memcmp(x->values, y->values, sizeof x->values[0] * (size_t)x->n_choices) != 0)
            return false;
    }
    return true;
}

/* The best GFLOP/s of a replay's whole dataset. */
static double replay_best(const rlt_replay *r)
{
    const rlt_space *members = rlt_replay_space(r);
    uint64_t n = rlt_space_size(members);
    double best = 0;
    rlt_config c;
    for (uint64_t i = 0; i < n; i++) {
        rlt_space_config_of(members, i, &c);
        const rlt_replay_entry *e = rlt_replay_find(r, &c);
        if (e && e->status == RLT_STATUS_OK && e->gflops > best) best = e->gflops;
    }
    return best;
}

rlt_status rlt_config_measurer_create_replay(const rlt_knob_space *space, const char *dataset_path,
                                             rlt_config_measurer **out, rlt_diag *diag)
{
    rlt_diag local = {0};
    rlt_diag *d = diag ? diag : &local;
    *out = NULL;
    if (!dataset_path && !space->replay)
        return rlt_fail(d, RLT_STATUS_INVALID_ARGUMENT,
                        "a replay needs a dataset: give its path, or open the space from it "
                        "(rlt_knob_space_open_dataset)");
    rlt_config_measurer *m = rlt_calloc(1, sizeof *m);
    if (!m) return rlt_fail(d, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a measurer");
    m->space = space;
    m->is_replay = true;
    rlt_status st = RLT_STATUS_OK;
    if (dataset_path) {
        if ((st = rlt_replay_open(dataset_path, space->op, NULL, &m->replay, d)) != RLT_STATUS_OK) goto done;
        const rlt_dataset_info *info = rlt_replay_info(m->replay);
        if (info->n_threads != space->full.n_threads) {
            st = rlt_fail(d, RLT_STATUS_INVALID_ARGUMENT,
                          "dataset '%s' was measured with %d thread%s, the space is of %d: make the space with "
                          "the dataset's thread count, or open it from the dataset",
                          dataset_path, info->n_threads, info->n_threads == 1 ? "" : "s", space->full.n_threads);
            goto done;
        }
        if (!same_knobs(rlt_replay_space(m->replay), &space->full)) {
            st = rlt_fail(d, RLT_STATUS_INVALID_ARGUMENT,
                          "dataset '%s' was measured on a space with other knobs or choices than this one (another "
                          "machine's vector width, or clang offered or not): open the space from the dataset",
                          dataset_path);
            goto done;
        }
    }
    m->replay_in_use = m->replay ? m->replay : space->replay;
    m->best_gflops = replay_best(m->replay_in_use);
    st = rlt_measurer_replay_create(m->replay_in_use, &m->inner, d);
done:
    if (st != RLT_STATUS_OK) {
        rlt_config_measurer_destroy(m);
        return st;
    }
    *out = m;
    return RLT_STATUS_OK;
}

void rlt_config_measurer_destroy(rlt_config_measurer *m)
{
    if (!m) return;
    rlt_measurer_destroy(m->inner); /* before the database and the replay it reads */
    rlt_db_close(m->db);
    rlt_replay_close(m->replay);
    rlt_free(m->strings);
    rlt_free(m->trials);
    rlt_free(m->slot);
    rlt_free(m);
}

const char *rlt_config_measurer_kind(const rlt_config_measurer *m) { return m->is_replay ? "replay" : "live"; }
double rlt_config_measurer_best_gflops(const rlt_config_measurer *m) { return m->best_gflops; }
const char *rlt_config_measurer_last_error(const rlt_config_measurer *m) { return m->last_error; }

static bool reserve(rlt_config_measurer *m, int n)
{
    if (n <= m->cap) return true;
    rlt_trial *trials = rlt_realloc(m->trials, sizeof *trials * (size_t)n);
    if (trials) m->trials = trials;
    int *slot = rlt_realloc(m->slot, sizeof *slot * (size_t)n);
    if (slot) m->slot = slot;
    if (!trials || !slot) return false;
    m->cap = n;
    return true;
}

static rlt_status measure_batch(rlt_config_measurer *m, int n, const int *configs, rlt_config_result *out,
                                rlt_diag *d)
{
    const rlt_space *sp = &m->space->full;
    int n_knobs = sp->n_knobs;
    if (n < 0) return rlt_fail(d, RLT_STATUS_INVALID_ARGUMENT, "rlt_config_measure: n is %d", n);
    if (n == 0) return RLT_STATUS_OK;
    if (!configs || !out) return rlt_fail(d, RLT_STATUS_INVALID_ARGUMENT, "rlt_config_measure: no configurations");
    if (!reserve(m, n)) return rlt_fail(d, RLT_STATUS_OUT_OF_MEMORY, "out of memory measuring a batch");
    /* every row in range before anything is measured */
    for (int i = 0; i < n; i++) {
        int bad = 0;
        if (!config_of_ints(sp, configs + (size_t)i * (size_t)n_knobs, &m->trials[i].config, &bad)) {
            char what[48];
            snprintf(what, sizeof what, "configuration %d: ", i);
            return out_of_range(sp, configs + (size_t)i * (size_t)n_knobs, bad, what, d);
        }
    }
    /* invalid ones are answered here; the valid ones go to the measurer */
    int n_valid = 0;
    for (int i = 0; i < n; i++) {
        rlt_config c = m->trials[i].config;
        memset(&out[i], 0, sizeof out[i]);
        if (!rlt_space_is_valid(sp, &c)) {
            rlt_diag why = {0};
            out[i].status = reason_invalid(sp, &c, &why);
            copy_text(out[i].message, sizeof out[i].message, why.message);
            continue;
        }
        rlt_trial *t = &m->trials[n_valid];
        memset(t, 0, sizeof *t);
        t->config = c;
        t->source = RLT_TRIAL_PENDING;
        m->slot[n_valid++] = i;
    }
    if (n_valid == 0) return RLT_STATUS_OK;
    rlt_measure_ctx ctx = {.best_gflops = 0, .stop = NULL}; /* no slow cutoff: every one timed alike */
    rlt_status st = m->inner->ops->measure(m->inner, n_valid, m->trials, &ctx, d);
    if (st != RLT_STATUS_OK) return st;
    for (int k = 0; k < n_valid; k++) {
        const rlt_trial *t = &m->trials[k];
        rlt_config_result *r = &out[m->slot[k]];
        r->status = t->status;
        r->is_absent = t->source == RLT_TRIAL_ABSENT;
        r->is_from_records = t->source == RLT_TRIAL_RECORDED || t->source == RLT_TRIAL_REPLAYED;
        bool is_ok = t->status == RLT_STATUS_OK && !r->is_absent;
        r->gflops = is_ok ? t->score : 0;
        r->time_median_ms = is_ok ? t->time_ms : 0;
        if (t->source == RLT_TRIAL_MEASURED && !is_ok) copy_text(r->message, sizeof r->message, t->record.message);
        if (!is_ok && !r->is_absent && !r->message[0]) copy_text(r->message, sizeof r->message, rlt_status_str(t->status));
        if (!m->is_replay && r->gflops > m->best_gflops) m->best_gflops = r->gflops;
    }
    return RLT_STATUS_OK;
}

rlt_status rlt_config_measure(rlt_config_measurer *m, int n, const int *configs, rlt_config_result *out,
                              rlt_diag *diag)
{
    rlt_diag local = {0};
    rlt_diag *d = diag ? diag : &local;
    return keep(m->last_error, sizeof m->last_error, measure_batch(m, n, configs, out, d), d);
}
