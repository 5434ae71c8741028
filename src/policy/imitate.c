/*
 * imitate.c - demonstrations and behaviour cloning (imitate.h): the
 * demonstrations file, rlt_demos_make (search, then label every shape with
 * the library's best trace) and rlt_policy_imitate (a blind bc policy
 * trained on them by masked softmax cross-entropy).
 */
#include "policy/imitate.h"

#include "ir/ir.h"
#include "nn/nn.h"
#include "policy/search.h"

#include <cblas.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEMOS_HEADER "# rltune demos v"
#define DEMOS_VERSION 1
#define ILLEGAL_LOGIT (-1e9f)   /* added to an illegal action's logit: probability 0, no gradient */
#define MAX_GRAD_NORM 10.0
#define MISS_SCORE 0.01         /* a trace that does not apply or fails, against a shape's best */

void rlt_demo_set_free(rlt_demo_set *s)
{
    if (!s) return;
    for (int i = 0; i < s->n; i++) rlt_free(s->demos[i].op_spec);
    rlt_free(s->demos);
    rlt_free(s->about);
    *s = (rlt_demo_set){0};
}

rlt_status rlt_demo_set_append(rlt_demo_set *dst, rlt_demo_set *src, const char *src_name, rlt_diag *diag)
{
    rlt_str about;
    rlt_str_init(&about);
    if (dst->about) rlt_str_printf(&about, "%s | ", dst->about);
    rlt_str_printf(&about, "%s: %s", src_name, src->about ? src->about : "no about line");
    rlt_demo *all = rlt_realloc(dst->demos, (size_t)(dst->n + src->n) * sizeof *all);
    char *joined = about.has_failed ? NULL : rlt_str_take(&about);
    rlt_str_free(&about);
    if (all) dst->demos = all; /* grown, or the same: dst stays whole either way */
    if (!all || !joined) {
        rlt_free(joined);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory joining the demonstrations of %s", src_name);
    }
    memcpy(all + dst->n, src->demos, (size_t)src->n * sizeof *all);
    dst->n += src->n;
    src->n = 0; /* the demonstrations (their op specs) moved */
    rlt_free(src->demos);
    src->demos = NULL;
    rlt_free(dst->about);
    dst->about = joined;
    return RLT_STATUS_OK;
}

/* Appends a demonstration (op_spec copied); *cap is the array's room. */
static rlt_status demo_push(rlt_demo_set *s, int *cap, const char *op_spec, double gflops, double start_gflops,
                            const int *trace, int n_trace, rlt_diag *diag)
{
    if (s->n == *cap) {
        int n = *cap ? 2 * *cap : 64;
        rlt_demo *d = rlt_realloc(s->demos, (size_t)n * sizeof *d);
        if (!d) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory keeping demonstrations");
        s->demos = d;
        *cap = n;
    }
    rlt_demo *d = &s->demos[s->n];
    *d = (rlt_demo){.gflops = gflops, .start_gflops = start_gflops, .n_trace = n_trace};
    if (!(d->op_spec = rlt_strdup(op_spec)))
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory keeping demonstrations");
    if (n_trace > 0) memcpy(d->trace, trace, (size_t)n_trace * sizeof *trace);
    s->n++;
    return RLT_STATUS_OK;
}

/* ---- the file ------------------------------------------------------------ */

rlt_status rlt_demo_set_save(const rlt_demo_set *s, const char *path, rlt_diag *diag)
{
    if (s->n == 0) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "no demonstration to write to %s", path);
    if (s->about && strchr(s->about, '\n'))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "a demonstrations file's about must be one line");
    rlt_str t;
    rlt_str_init(&t);
    rlt_str_printf(&t, DEMOS_HEADER "%d\n", DEMOS_VERSION);
    if (s->about) rlt_str_printf(&t, "# %s\n", s->about);
    for (int i = 0; i < s->n; i++) {
        const rlt_demo *d = &s->demos[i];
        rlt_str_printf(&t, "%s\t%.3f\t%.3f\t", d->op_spec, d->gflops, d->start_gflops);
        if (d->n_trace == 0) rlt_str_append(&t, "-");
        for (int k = 0; k < d->n_trace; k++)
            rlt_str_printf(&t, "%s%s", k ? " " : "", rlt_env_action_name(d->trace[k]));
        rlt_str_append(&t, "\n");
    }
    rlt_status st = t.has_failed ? rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory writing %s", path)
                                 : rlt_file_write(path, t.data, t.len, diag);
    rlt_str_free(&t);
    return st;
}

/* A GFLOP/s field: a finite number >= 0. */
static bool parse_gflops(const char *text, double *out)
{
    char *end = NULL;
    double v = strtod(text, &end);
    if (end == text || *end || !isfinite(v) || v < 0) return false;
    *out = v;
    return true;
}

/* One line "SPEC\tGFLOPS\tSTART\tACTIONS" (modified in place). */
static rlt_status parse_line(const char *path, int line_no, char *line, rlt_demo_set *s, int *cap, rlt_diag *diag)
{
    char *field[4];
    int n = 0;
    for (char *p = line; n < 4; n++) {
        field[n] = p;
        char *tab = strchr(p, '\t');
        if (!tab) {
            n++;
            break;
        }
        *tab = '\0';
        p = tab + 1;
    }
    if (n != 4 || strchr(field[3], '\t'))
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                        "%s:%d: expected four tab-separated fields: op spec, GFLOP/s, start GFLOP/s, actions", path,
                        line_no);
    rlt_op *op = NULL;
    rlt_diag od = {0};
    if (rlt_op_parse(field[0], &op, &od) != RLT_STATUS_OK)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s:%d: op spec '%.64s': %s", path, line_no, field[0],
                        od.message);
    double gflops = 0, start = 0;
    int trace[RLT_OPTIMIZE_MAX_TRACE], n_trace = 0;
    rlt_status st = RLT_STATUS_OK;
    if (!parse_gflops(field[1], &gflops) || !parse_gflops(field[2], &start)) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s:%d: GFLOP/s '%.32s' / '%.32s': not finite numbers >= 0", path,
                      line_no, field[1], field[2]);
        goto done;
    }
    if (strcmp(field[3], "-") != 0) {
        for (char *p = field[3]; st == RLT_STATUS_OK;) {
            char *sp = strchr(p, ' ');
            if (sp) *sp = '\0';
            int a = rlt_env_action_from_name(p);
            if (a < 0)
                st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s:%d: unknown action '%.32s' (rltune env lists them)",
                              path, line_no, p);
            else if (n_trace == RLT_OPTIMIZE_MAX_TRACE)
                st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s:%d: more than %d actions", path, line_no,
                              RLT_OPTIMIZE_MAX_TRACE);
            else
                trace[n_trace++] = a;
            if (!sp) break;
            p = sp + 1;
        }
    }
    if (st == RLT_STATUS_OK) st = demo_push(s, cap, op->spec, gflops, start, trace, n_trace, diag);
done:
    rlt_op_destroy(op);
    return st;
}

rlt_status rlt_demo_set_load(const char *path, rlt_demo_set *out, rlt_diag *diag)
{
    *out = (rlt_demo_set){0};
    rlt_demo_set s = {0};
    int cap = 0, line_no = 0;
    char *text = NULL;
    rlt_status st = rlt_text_file_read(path, &text, diag);
    for (char *p = text; st == RLT_STATUS_OK && p && (*p || line_no == 0);) {
        line_no++;
        char *line = p;
        size_t len = strcspn(line, "\n");
        p = line[len] ? line + len + 1 : line + len;
        while (len > 0 && strchr(" \r", line[len - 1])) len--;
        line[len] = '\0';
        if (line_no == 1) {
            size_t h = strlen(DEMOS_HEADER);
            if (strncmp(line, DEMOS_HEADER, h) != 0)
                st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s:1: not a demonstrations file (expected '%s%d')", path,
                              DEMOS_HEADER, DEMOS_VERSION);
            else if (strcmp(line + h, "1") != 0)
                st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                              "%s:1: demonstrations format version '%.16s'; this rltune reads version %d", path,
                              line + h, DEMOS_VERSION);
            continue;
        }
        if (!*line) continue;
        if (*line == '#') {
            if (!s.about && line[1] == ' ' && !(s.about = rlt_strdup(line + 2)))
                st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading %s", path);
            continue;
        }
        st = parse_line(path, line_no, line, &s, &cap, diag);
    }
    if (st == RLT_STATUS_OK && s.n == 0)
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s:%d: no demonstration in the file", path, line_no);
    rlt_free(text);
    if (st == RLT_STATUS_OK) {
        *out = s;
        return st;
    }
    rlt_demo_set_free(&s);
    return st;
}

/* ---- making demonstrations ----------------------------------------------- */

typedef struct trace_lib {
    int n, cap;
    int *len;                            /* n */
    int (*acts)[RLT_OPTIMIZE_MAX_TRACE]; /* n */
} trace_lib;

static void lib_free(trace_lib *l)
{
    rlt_free(l->len);
    rlt_free(l->acts);
}

/* Adds a trace unless empty or already there. */
static rlt_status lib_add(trace_lib *l, const int *trace, int n, rlt_diag *diag)
{
    if (n == 0) return RLT_STATUS_OK;
    for (int i = 0; i < l->n; i++)
        if (l->len[i] == n && memcmp(l->acts[i], trace, (size_t)n * sizeof *trace) == 0) return RLT_STATUS_OK;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        int *len = rlt_realloc(l->len, (size_t)cap * sizeof *len);
        if (len) l->len = len;
        int(*acts)[RLT_OPTIMIZE_MAX_TRACE] = len ? rlt_realloc(l->acts, (size_t)cap * sizeof *acts) : NULL;
        if (!acts) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory keeping traces");
        l->acts = acts;
        l->cap = cap;
    }
    l->len[l->n] = n;
    memcpy(l->acts[l->n], trace, (size_t)n * sizeof *trace);
    l->n++;
    return RLT_STATUS_OK;
}

static void progress(const rlt_demo_gen_opts *o, const char *fmt, ...) RLT_PRINTF(2, 3);
static void progress(const rlt_demo_gen_opts *o, const char *fmt, ...)
{
    if (!o->progress) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    o->progress(o->progress_ctx, line);
}

/* Walks `trace` in the blind env from the default nest: *out_sched is the
 * schedule where it ends, or NULL when an action is illegal on the way. */
static rlt_status walk_trace(rlt_env *blind, const int *trace, int n, char **out_sched, rlt_diag *diag)
{
    *out_sched = NULL;
    rlt_status st = rlt_env_reset(blind, diag);
    for (int k = 0; k < n && st == RLT_STATUS_OK; k++) {
        bool mask[RLT_ENV_N_ACTIONS];
        rlt_env_action_mask(blind, mask);
        if (!mask[trace[k]]) return RLT_STATUS_OK;
        st = rlt_env_step(blind, trace[k], NULL, NULL, diag);
    }
    if (st == RLT_STATUS_OK && !(*out_sched = rlt_env_schedule(blind)))
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory walking a trace");
    return st;
}

/* Stage 1 on one shape: each expert's result trace into the library. */
static rlt_status search_shape(const char *spec, const rlt_demo_gen_opts *o, trace_lib *lib, rlt_diag *diag)
{
    rlt_env *env = NULL;
    rlt_optimize_result r = {0};
    char done[512] = "";
    rlt_status st = rlt_env_create(spec, &o->env, &env, diag);
    if (st == RLT_STATUS_OK && !o->no_greedy) {
        rlt_env_search_opts so = {.kind = RLT_ENV_SEARCH_GREEDY,
                                  .max_steps = o->max_steps,
                                  .lookahead = 1,
                                  .time_budget_s = o->budget_s};
        if ((st = rlt_env_reset(env, diag)) == RLT_STATUS_OK && (st = rlt_env_search(env, &so, &r, diag)) == RLT_STATUS_OK) {
            snprintf(done, sizeof done, "greedy %.1f GFLOP/s (%.1f s)", r.gflops, r.wall_s);
            st = lib_add(lib, r.trace, r.n_trace, diag);
        }
        rlt_optimize_result_free(&r);
    }
    if (st == RLT_STATUS_OK && o->guide) {
        rlt_rollout_opts ro = {.max_steps = o->max_steps, .beam_width = o->guide_beam};
        if ((st = rlt_env_reset(env, diag)) == RLT_STATUS_OK &&
            (st = rlt_policy_rollout(o->guide, env, &ro, &r, diag)) == RLT_STATUS_OK) {
            size_t at = strlen(done);
            snprintf(done + at, sizeof done - at, "%sguided beam %.1f GFLOP/s (%.1f s)", at ? ", " : "", r.gflops,
                     r.wall_s);
            st = lib_add(lib, r.trace, r.n_trace, diag);
        }
        rlt_optimize_result_free(&r);
    }
    if (st == RLT_STATUS_OK) progress(o, "search %s: %s; %d traces", spec, done, lib->n);
    rlt_env_destroy(env);
    return st;
}

/* Stage 2 on one shape: g[t] = the GFLOP/s of every library trace's end
 * nest (-1 where the trace does not apply), *start the default nest's. */
static rlt_status label_shape(const char *spec, const rlt_demo_gen_opts *o, const trace_lib *lib, double *g,
                              double *start, rlt_diag *diag)
{
    rlt_env *env = NULL, *blind = NULL;
    rlt_env **clones = rlt_calloc((size_t)lib->n, sizeof *clones);
    char **scheds = rlt_calloc((size_t)lib->n, sizeof *scheds);
    int *of = rlt_calloc((size_t)lib->n, sizeof *of), n = 0;
    rlt_status st = clones && scheds && of ? RLT_STATUS_OK
                                           : rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory labelling");
    if (st == RLT_STATUS_OK) st = rlt_env_create(spec, &o->env, &env, diag);
    if (st == RLT_STATUS_OK) st = rlt_policy_blind_env(spec, &blind, diag);
    if (st == RLT_STATUS_OK) st = rlt_env_reset(env, diag);
    for (int t = 0; t < lib->n && st == RLT_STATUS_OK; t++) {
        g[t] = -1;
        if ((st = walk_trace(blind, lib->acts[t], lib->len[t], &scheds[n], diag)) != RLT_STATUS_OK || !scheds[n])
            continue;
        of[n] = t;
        st = rlt_env_clone(env, &clones[n++], diag);
    }
    if (st == RLT_STATUS_OK) st = rlt_env_reset_batch(clones, (const char *const *)scheds, n, diag);
    for (int k = 0; k < n && st == RLT_STATUS_OK; k++) g[of[k]] = rlt_env_gflops(clones[k]);
    if (st == RLT_STATUS_OK) *start = rlt_env_gflops(env);
    for (int k = 0; k < n; k++) {
        rlt_env_destroy(clones[k]);
        rlt_free(scheds[k]);
    }
    rlt_env_destroy(blind);
    rlt_env_destroy(env);
    rlt_free(of);
    rlt_free(scheds);
    rlt_free(clones);
    return st;
}

static rlt_status check_gen_opts(const rlt_demo_gen_opts *o, int n_search, int n_label, rlt_diag *diag)
{
    if (n_search < (o->traces ? 0 : 1) || n_label < 1)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "demonstrations need shapes to search (%d) and label (%d)",
                        n_search, n_label);
    if (o->no_greedy && !o->guide && !o->traces)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "demonstrations need an expert: greedy search, a guide or given traces");
    if (o->guide_beam < 2 || o->guide_beam > RLT_ENV_SEARCH_MAX_BEAM)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "guide beam width %d (2..%d)", o->guide_beam,
                        RLT_ENV_SEARCH_MAX_BEAM);
    if (o->max_steps < 1 || o->max_steps > RLT_OPTIMIZE_MAX_TRACE)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "steps %d (1..%d)", o->max_steps, RLT_OPTIMIZE_MAX_TRACE);
    if (!(o->budget_s > 0) || !isfinite(o->budget_s))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "search budget %g s (above 0)", o->budget_s);
    if (!(o->tie < 1) || !isfinite(o->tie))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "tie %g (below 1; negative: none)", o->tie);
    return RLT_STATUS_OK;
}

rlt_status rlt_demos_make(const char *const *search, int n_search, const char *const *label, int n_label,
                          const rlt_demo_gen_opts *opts, rlt_demo_set *out, rlt_diag *diag)
{
    *out = (rlt_demo_set){0};
    rlt_demo_gen_opts o = *opts;
    if (o.guide_beam == 0) o.guide_beam = RLT_DEMOS_DEFAULT_GUIDE_BEAM;
    if (o.max_steps == 0) o.max_steps = RLT_DEMOS_DEFAULT_STEPS;
    if (o.budget_s == 0) o.budget_s = RLT_DEMOS_DEFAULT_BUDGET_S;
    if (o.tie == 0) o.tie = RLT_DEMOS_DEFAULT_TIE;
    if (o.tie < 0) o.tie = 0;
    rlt_status st = check_gen_opts(&o, n_search, n_label, diag);
    if (st != RLT_STATUS_OK) return st;
    trace_lib lib = {0};
    double *g = NULL, *start = NULL, *score = NULL;
    rlt_demo_set s = {0};
    int cap = 0;
    int n_searched = 0, n_given = 0;
    for (int i = 0; o.traces && i < o.traces->n && st == RLT_STATUS_OK; i++) {
        int before = lib.n;
        st = lib_add(&lib, o.traces->demos[i].trace, o.traces->demos[i].n_trace, diag);
        n_given += lib.n > before;
    }
    if (st == RLT_STATUS_OK && o.traces) progress(&o, "given: %d traces", lib.n);
    for (int i = 0; i < n_search && st == RLT_STATUS_OK && !(o.stop && *o.stop); i++, n_searched++) {
        if ((st = search_shape(search[i], &o, &lib, diag)) != RLT_STATUS_OK)
            rlt_diag_prefix(diag, "searching %s", search[i]);
    }
    if (st == RLT_STATUS_OK && lib.n == 0 && !(o.stop && *o.stop))
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "no search found a nest faster than its start");
    if (st == RLT_STATUS_OK && (!(g = rlt_malloc((size_t)n_label * (size_t)lib.n * sizeof *g)) ||
                                !(start = rlt_malloc((size_t)n_label * sizeof *start)) ||
                                !(score = rlt_calloc((size_t)lib.n, sizeof *score))))
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory labelling %d shapes", n_label);
    int n_done = 0;
    for (int i = 0; i < n_label && st == RLT_STATUS_OK && !(o.stop && *o.stop); i++, n_done++) {
        double *gi = g + (size_t)i * (size_t)lib.n;
        if ((st = label_shape(label[i], &o, &lib, gi, &start[i], diag)) != RLT_STATUS_OK) {
            rlt_diag_prefix(diag, "labelling %s", label[i]);
            break;
        }
        int best = 0, n_apply = 0;
        for (int t = 0; t < lib.n; t++) {
            n_apply += gi[t] >= 0;
            if (gi[t] > gi[best]) best = t;
        }
        progress(&o, "label %d/%d %s: best %.1f GFLOP/s (trace %d of %d, %d apply), start %.1f", i + 1, n_label,
                 label[i], gi[best], best + 1, lib.n, n_apply, start[i]);
    }
    /* Each trace's geometric mean over the labelled shapes of its GFLOP/s
     * over the shape's best. */
    for (int i = 0; i < n_done && st == RLT_STATUS_OK; i++) {
        const double *gi = g + (size_t)i * (size_t)lib.n;
        double best = 0;
        for (int t = 0; t < lib.n; t++) best = RLT_MAX(best, gi[t]);
        if (best <= 0) continue;
        for (int t = 0; t < lib.n; t++) score[t] += log(RLT_MAX(gi[t] / best, MISS_SCORE));
    }
    for (int i = 0; i < n_done && st == RLT_STATUS_OK; i++) {
        const double *gi = g + (size_t)i * (size_t)lib.n;
        int best = 0;
        for (int t = 1; t < lib.n; t++)
            if (gi[t] > gi[best]) best = t;
        int pick = best;
        for (int t = 0; t < lib.n; t++)
            if (gi[t] >= (1 - o.tie) * gi[best] && score[t] > score[pick]) pick = t;
        if (gi[pick] > start[i])
            st = demo_push(&s, &cap, label[i], gi[pick], start[i], lib.acts[pick], lib.len[pick], diag);
        else
            st = demo_push(&s, &cap, label[i], start[i], start[i], NULL, 0, diag);
    }
    if (st == RLT_STATUS_OK) {
        rlt_str a;
        rlt_str_init(&a);
        rlt_str_printf(&a, "experts:%s%s", o.no_greedy ? "" : " greedy (lookahead 1)", o.no_greedy || !o.guide ? "" : ",");
        if (o.guide) rlt_str_printf(&a, " beam %d guided by a policy", o.guide_beam);
        if (o.traces) rlt_str_printf(&a, "%s%d traces given", o.no_greedy && !o.guide ? " " : ", ", n_given);
        rlt_str_printf(&a, "; %d of %d search shapes, budget %g s, %d steps; %d traces; %d of %d shapes labelled; tie %g",
                       n_searched, n_search, o.budget_s, o.max_steps, lib.n, n_done, n_label, o.tie);
        if (a.has_failed || !(s.about = rlt_str_take(&a)))
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory describing demonstrations");
        rlt_str_free(&a);
    }
    if (st == RLT_STATUS_OK) {
        *out = s;
        s = (rlt_demo_set){0};
    }
    rlt_demo_set_free(&s);
    rlt_free(score);
    rlt_free(start);
    rlt_free(g);
    lib_free(&lib);
    return st;
}

/* ---- behaviour cloning --------------------------------------------------- */

typedef struct samples {
    int n, cap;
    float *obs; /* n x RLT_ENV_OBS_LEN */
    int *act;   /* n */
} samples;

static rlt_status samples_push(samples *s, const float *obs, int act, rlt_diag *diag)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 256;
        float *o = rlt_realloc(s->obs, (size_t)cap * RLT_ENV_OBS_LEN * sizeof *o);
        if (o) s->obs = o;
        int *a = o ? rlt_realloc(s->act, (size_t)cap * sizeof *a) : NULL;
        if (!a) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory collecting samples");
        s->act = a;
        s->cap = cap;
    }
    memcpy(s->obs + (size_t)s->n * RLT_ENV_OBS_LEN, obs, RLT_ENV_OBS_LEN * sizeof *obs);
    s->obs[(size_t)s->n * RLT_ENV_OBS_LEN + RLT_ENV_OBS_GFLOPS] = 0.0f;
    s->act[s->n++] = act;
    return RLT_STATUS_OK;
}

/* Replays demonstration i in a blind env: one sample per state, the last
 * one's action stop. */
static rlt_status collect(const rlt_demo *d, int i, int max_steps, samples *s, rlt_diag *diag)
{
    if (d->n_trace > max_steps)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "demonstration %d (%s): %d actions, more than %d steps",
                        i + 1, d->op_spec, d->n_trace, max_steps);
    rlt_env *env = NULL;
    float obs[RLT_ENV_OBS_LEN];
    rlt_status st = rlt_policy_blind_env(d->op_spec, &env, diag);
    if (st == RLT_STATUS_OK) st = rlt_env_reset(env, diag);
    for (int k = 0; k <= d->n_trace && st == RLT_STATUS_OK; k++) {
        int a = k < d->n_trace ? d->trace[k] : RLT_ENV_ACTION_STOP;
        if ((st = rlt_env_observe(env, obs, RLT_ENV_OBS_LEN, diag)) != RLT_STATUS_OK) break;
        if (obs[RLT_ENV_OBS_MASK + a] < 0.5f) {
            st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "demonstration %d (%s): action %d, %s, is illegal there",
                          i + 1, d->op_spec, k + 1, rlt_env_action_name(a));
            break;
        }
        if ((st = samples_push(s, obs, a, diag)) != RLT_STATUS_OK) break;
        if (k < d->n_trace) st = rlt_env_step(env, a, NULL, NULL, diag);
    }
    rlt_env_destroy(env);
    return st;
}

static void mask_logits(int n, const float *obs, float *logits)
{
    for (int i = 0; i < n; i++)
        for (int a = 0; a < RLT_ENV_N_ACTIONS; a++)
            if (obs[(size_t)i * RLT_ENV_OBS_LEN + RLT_ENV_OBS_MASK + a] < 0.5f)
                logits[(size_t)i * RLT_ENV_N_ACTIONS + a] += ILLEGAL_LOGIT;
}

static const rlt_nn_groups one_group = {.n_cols = RLT_ENV_N_ACTIONS, .n_groups = 1};

/* Mean cross-entropy and accuracy of the policy on all samples. */
static rlt_status evaluate_samples(const rlt_policy *p, const samples *s, float *logits, double *out_loss,
                                   double *out_accuracy, rlt_diag *diag)
{
    rlt_status st = rlt_mlp_predict(p->net, s->n, s->obs, logits, diag);
    if (st != RLT_STATUS_OK) return st;
    mask_logits(s->n, s->obs, logits);
    if ((st = rlt_nn_loss_nll(&one_group, s->n, logits, s->act, NULL, out_loss, NULL, diag)) != RLT_STATUS_OK)
        return st;
    int n_right = 0;
    for (int i = 0; i < s->n; i++) {
        const float *row = logits + (size_t)i * RLT_ENV_N_ACTIONS;
        int best = 0;
        for (int a = 1; a < RLT_ENV_N_ACTIONS; a++)
            if (row[a] > row[best]) best = a;
        n_right += best == s->act[i];
    }
    *out_accuracy = (double)n_right / s->n;
    return RLT_STATUS_OK;
}

/* Whether the policy's greedy choices repeat demonstration d exactly. */
static rlt_status reproduces(const rlt_policy *p, const rlt_demo *d, bool *out, rlt_diag *diag)
{
    rlt_env *env = NULL;
    float obs[RLT_ENV_OBS_LEN], scores[RLT_ENV_N_ACTIONS];
    *out = false;
    rlt_status st = rlt_policy_blind_env(d->op_spec, &env, diag);
    if (st == RLT_STATUS_OK) st = rlt_env_reset(env, diag);
    bool same = true;
    for (int k = 0; k <= d->n_trace && st == RLT_STATUS_OK && same; k++) {
        int want = k < d->n_trace ? d->trace[k] : RLT_ENV_ACTION_STOP;
        if ((st = rlt_env_observe(env, obs, RLT_ENV_OBS_LEN, diag)) != RLT_STATUS_OK ||
            (st = rlt_policy_scores(p, 1, obs, scores, diag)) != RLT_STATUS_OK)
            break;
        same = rlt_policy_best_action(scores) == want;
        if (same && k < d->n_trace) st = rlt_env_step(env, want, NULL, NULL, diag);
    }
    rlt_env_destroy(env);
    *out = st == RLT_STATUS_OK && same;
    return st;
}

rlt_status rlt_policy_imitate(const rlt_demo_set *demos, const rlt_imitate_opts *opts, rlt_policy **out,
                              rlt_imitate_report *report, rlt_diag *diag)
{
    *out = NULL;
    rlt_imitate_opts o = opts ? *opts : (rlt_imitate_opts){0};
    if (o.epochs == 0) o.epochs = RLT_IMITATE_DEFAULT_EPOCHS;
    if (o.batch == 0) o.batch = RLT_IMITATE_DEFAULT_BATCH;
    if (o.lr == 0) o.lr = RLT_IMITATE_DEFAULT_LR;
    if (o.max_steps == 0) o.max_steps = RLT_POLICY_DEFAULT_STEPS;
    if (o.epochs < 1 || o.epochs > 100000 || o.batch < 1 || o.batch > 4096 || !(o.lr > 0 && o.lr <= 1) ||
        o.max_steps < 1 || o.max_steps > RLT_OPTIMIZE_MAX_TRACE)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "imitate: epochs %d (1..100000), batch %d (1..4096), lr %g ((0, 1]), max_steps %d (1..%d)",
                        o.epochs, o.batch, o.lr, o.max_steps, RLT_OPTIMIZE_MAX_TRACE);
    if (demos->n < 1) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "imitate: no demonstration");
    openblas_set_num_threads(1); /* bit-identical runs; the networks are small */

    samples s = {0};
    rlt_policy *p = NULL;
    rlt_imitate_report rep = {.n_demos = demos->n};
    int *perm = NULL, *mb_act = NULL;
    float *mb_obs = NULL, *mb_logits = NULL, *mb_d = NULL, *all_logits = NULL;
    rlt_status st = RLT_STATUS_OK;
    for (int i = 0; i < demos->n && st == RLT_STATUS_OK; i++) st = collect(&demos->demos[i], i, o.max_steps, &s, diag);
    if (st != RLT_STATUS_OK) goto cleanup;
    rep.n_samples = s.n;
    if ((st = rlt_policy_create(RLT_POLICY_ALGO_BC, o.n_hidden, o.hidden, o.seed, &p, diag)) != RLT_STATUS_OK ||
        (st = rlt_adam_create(&(rlt_adam_opts){.lr = o.lr}, p->net, &p->net_adam, diag)) != RLT_STATUS_OK)
        goto cleanup;
    int m_max = RLT_MIN(o.batch, s.n);
    perm = rlt_malloc((size_t)s.n * sizeof *perm);
    mb_act = rlt_malloc((size_t)m_max * sizeof *mb_act);
    mb_obs = rlt_malloc((size_t)m_max * RLT_ENV_OBS_LEN * sizeof *mb_obs);
    mb_logits = rlt_malloc((size_t)m_max * RLT_ENV_N_ACTIONS * sizeof *mb_logits);
    mb_d = rlt_malloc((size_t)m_max * RLT_ENV_N_ACTIONS * sizeof *mb_d);
    all_logits = rlt_malloc((size_t)s.n * RLT_ENV_N_ACTIONS * sizeof *all_logits);
    if (!perm || !mb_act || !mb_obs || !mb_logits || !mb_d || !all_logits) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory training on %d samples", s.n);
        goto cleanup;
    }
    if ((st = evaluate_samples(p, &s, all_logits, &rep.loss_first, &rep.accuracy, diag)) != RLT_STATUS_OK)
        goto cleanup;
    rlt_rng rng;
    rlt_rng_seed(&rng, o.seed ^ 0x6d696d6963ULL);
    for (int i = 0; i < s.n; i++) perm[i] = i;
    for (int epoch = 0; epoch < o.epochs && st == RLT_STATUS_OK; epoch++) {
        for (int i = s.n - 1; i > 0; i--) {
            int j = (int)rlt_rng_below(&rng, (uint64_t)i + 1), t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        double epoch_loss = 0;
        for (int at = 0; at < s.n && st == RLT_STATUS_OK; at += m_max) {
            int m = RLT_MIN(m_max, s.n - at);
            for (int k = 0; k < m; k++) {
                memcpy(mb_obs + (size_t)k * RLT_ENV_OBS_LEN, s.obs + (size_t)perm[at + k] * RLT_ENV_OBS_LEN,
                       RLT_ENV_OBS_LEN * sizeof *mb_obs);
                mb_act[k] = s.act[perm[at + k]];
            }
            double loss = 0;
            if ((st = rlt_mlp_forward(p->net, m, mb_obs, mb_logits, diag)) != RLT_STATUS_OK) break;
            mask_logits(m, mb_obs, mb_logits);
            if ((st = rlt_nn_loss_nll(&one_group, m, mb_logits, mb_act, NULL, &loss, mb_d, diag)) != RLT_STATUS_OK)
                break;
            rlt_mlp_zero_grad(p->net);
            if ((st = rlt_mlp_backward(p->net, m, mb_d, NULL, diag)) != RLT_STATUS_OK ||
                (st = rlt_mlp_grad_clip(p->net, MAX_GRAD_NORM, NULL, diag)) != RLT_STATUS_OK ||
                (st = rlt_adam_step(p->net_adam, p->net, diag)) != RLT_STATUS_OK)
                break;
            epoch_loss += loss * m;
        }
        if (st == RLT_STATUS_OK && o.progress && ((epoch + 1) % RLT_MAX(1, o.epochs / 10) == 0 || epoch + 1 == o.epochs)) {
            char line[128];
            snprintf(line, sizeof line, "epoch %d/%d: loss %.4f", epoch + 1, o.epochs, epoch_loss / s.n);
            o.progress(o.progress_ctx, line);
        }
    }
    if (st != RLT_STATUS_OK) goto cleanup;
    if ((st = evaluate_samples(p, &s, all_logits, &rep.loss_last, &rep.accuracy, diag)) != RLT_STATUS_OK)
        goto cleanup;
    for (int i = 0; i < demos->n && st == RLT_STATUS_OK; i++) {
        bool same = false;
        st = reproduces(p, &demos->demos[i], &same, diag);
        rep.n_reproduced += same;
    }
    if (st != RLT_STATUS_OK) goto cleanup;
    rlt_adam_destroy(p->net_adam);
    p->net_adam = NULL;
    *out = p;
    p = NULL;
    if (report) *report = rep;

cleanup:
    rlt_policy_destroy(p);
    rlt_free(all_logits);
    rlt_free(mb_d);
    rlt_free(mb_logits);
    rlt_free(mb_obs);
    rlt_free(mb_act);
    rlt_free(perm);
    rlt_free(s.obs);
    rlt_free(s.act);
    return st;
}
