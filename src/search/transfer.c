/*
 * transfer.c - training rows from other workloads' records, for warm
 * starts of model-based tuners.
 *
 * Entry point: rlt_transfer_collect. One walk over the target's records
 * keeps (workload, config key, GFLOP/s) of every record, then each other
 * workload of the op's kind gets its own space (same options, so the same
 * knobs where the shapes allow) and its configs' features in that space.
 * Features describe the loop nest (extents, strides, reuse) as well as the
 * knobs, which is what lets a model trained on one shape rank configs of
 * another.
 */
#include "search/transfer.h"

#include <string.h>

typedef struct transfer_entry {
    int workload;  /* index into walk.specs */
    char *config;  /* owned */
    double gflops; /* 0 unless OK */
} transfer_entry;

typedef struct transfer_walk {
    const char *own_spec;
    char **specs;  /* distinct specs met, owned */
    int n_specs, cap_specs;
    transfer_entry *entries;
    int n, cap;
    bool has_failed; /* out of memory */
} transfer_walk;

static int spec_index(transfer_walk *w, const char *spec)
{
    for (int i = 0; i < w->n_specs; i++)
        if (strcmp(w->specs[i], spec) == 0) return i;
    if (w->n_specs == w->cap_specs) {
        int cap = w->cap_specs ? 2 * w->cap_specs : 16;
        char **specs = rlt_realloc(w->specs, sizeof *specs * (size_t)cap);
        if (!specs) return -1;
        w->specs = specs;
        w->cap_specs = cap;
    }
    size_t len = strlen(spec) + 1;
    char *copy = rlt_malloc(len);
    if (!copy) return -1;
    memcpy(copy, spec, len);
    w->specs[w->n_specs] = copy;
    return w->n_specs++;
}

static bool collect_record(const rlt_record *r, void *ctx)
{
    transfer_walk *w = ctx;
    if (strcmp(r->spec, w->own_spec) == 0 || !r->config[0]) return true;
    if (w->n == w->cap) {
        int cap = w->cap ? 2 * w->cap : 256;
        transfer_entry *e = rlt_realloc(w->entries, sizeof *e * (size_t)cap);
        if (!e) {
            w->has_failed = true;
            return false;
        }
        w->entries = e;
        w->cap = cap;
    }
    int k = spec_index(w, r->spec);
    size_t len = strlen(r->config) + 1;
    char *config = k >= 0 ? rlt_malloc(len) : NULL;
    if (!config) {
        w->has_failed = true;
        return false;
    }
    memcpy(config, r->config, len);
    bool is_ok = r->status == RLT_STATUS_OK;
    w->entries[w->n++] = (transfer_entry){k, config, is_ok ? r->gflops : 0.0};
    return true;
}

/* Appends the rows of workload k (entries from `first` on) to `out`. */
static rlt_status add_workload(const transfer_walk *w, int k, int first, const rlt_op *op,
                               const rlt_space_opts *space_opts, rlt_transfer *out, rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    rlt_op *other = NULL;
    rlt_space space;
    int n_entries = 0;
    double best = 0;
    for (int i = first; i < w->n; i++)
        if (w->entries[i].workload == k) {
            n_entries++;
            if (w->entries[i].gflops > best) best = w->entries[i].gflops;
        }
    /* Another kind, a user expression, no OK record, or knobs that do not
     * line up: nothing to learn from here. */
    rlt_diag ignored = {0};
    if (best <= 0 || rlt_op_parse(w->specs[k], &other, &ignored) != RLT_STATUS_OK ||
        strcmp(other->kind, op->kind) != 0 || strcmp(op->kind, "expr") == 0 ||
        rlt_space_create(other, space_opts, &space, &ignored) != RLT_STATUS_OK) {
        out->n_skipped += n_entries;
        goto cleanup;
    }
    if (rlt_space_n_features(&space) != out->n_features) {
        out->n_skipped += n_entries;
        goto cleanup;
    }
    int before = out->n_rows;
    for (int i = first; i < w->n; i++) {
        const transfer_entry *e = &w->entries[i];
        if (e->workload != k) continue;
        rlt_config c;
        float *row = out->xs + (size_t)out->n_rows * (size_t)out->n_features;
        if (rlt_space_config_parse(&space, e->config, &c, &ignored) != RLT_STATUS_OK ||
            rlt_space_features(&space, &c, row, &ignored) != RLT_STATUS_OK) {
            out->n_skipped++;
            continue;
        }
        out->ys[out->n_rows++] = e->gflops / best;
    }
    if (out->n_rows > before) out->n_workloads++;
cleanup:
    (void)diag;
    rlt_op_destroy(other);
    return st;
}

rlt_status rlt_transfer_collect(rlt_db *db, const rlt_op *op, const rlt_space *space,
                                const rlt_space_opts *space_opts, const char *target, int max_rows,
                                rlt_transfer *out, rlt_diag *diag)
{
    memset(out, 0, sizeof *out);
    out->n_features = rlt_space_n_features(space);
    if (max_rows <= 0) max_rows = 20000;
    transfer_walk w = {.own_spec = op->spec};
    rlt_status st = rlt_db_history(db, NULL, target, collect_record, &w, diag);
    if (st == RLT_STATUS_OK && w.has_failed)
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading records to transfer from");
    if (st != RLT_STATUS_OK) goto cleanup;

    /* the newest max_rows records, at most */
    int first = w.n > max_rows ? w.n - max_rows : 0;
    int n = w.n - first;
    out->xs = rlt_malloc(sizeof *out->xs * (size_t)(n > 0 ? n : 1) * (size_t)out->n_features);
    out->ys = rlt_malloc(sizeof *out->ys * (size_t)(n > 0 ? n : 1));
    if (!out->xs || !out->ys) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory keeping %d transferred rows", n);
        goto cleanup;
    }
    out->n_skipped = first;
    for (int k = 0; k < w.n_specs && st == RLT_STATUS_OK; k++)
        st = add_workload(&w, k, first, op, space_opts, out, diag);

cleanup:
    for (int i = 0; i < w.n; i++) rlt_free(w.entries[i].config);
    rlt_free(w.entries);
    for (int i = 0; i < w.n_specs; i++) rlt_free(w.specs[i]);
    rlt_free(w.specs);
    if (st != RLT_STATUS_OK) rlt_transfer_free(out);
    return st;
}

void rlt_transfer_free(rlt_transfer *t)
{
    rlt_free(t->xs);
    rlt_free(t->ys);
    t->xs = NULL;
    t->ys = NULL;
    t->n_rows = 0;
}
