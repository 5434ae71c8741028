/*
 * weights_file.c - the network weights file, version 1 (nn.h; the layout is
 * in docs/formats.md, "Network weights"): a network's spec and parameters,
 * optionally its Adam state, and a checksum, in little-endian binary.
 *
 * Entry points: rlt_mlp_save_bytes / rlt_mlp_load_bytes, and rlt_mlp_save /
 * rlt_mlp_load through a file (written atomically). The reader trusts
 * nothing: every read is bounds-checked, sizes are checked against the
 * header before anything is allocated, the checksum is checked before the
 * values are, and every value must be in range. A refused file gets
 * PARSE_ERROR and a message naming it and what was wrong.
 *
 * Layout, in order (u32/u64 little-endian integers, f32/f64 IEEE-754
 * little-endian):
 *   magic "RLTUNENN" (8 bytes), u32 version (1), u32 flags (bit 0: Adam
 *   state follows the parameters), u32 n_inputs, u32 n_layers, per layer
 *   u32 n_units and u32 activation (rlt_nn_act), u64 n_params, f32 params
 *   [n_params] (rlt_mlp_params order); with flag bit 0: f64 lr, beta1,
 *   beta2, eps, weight_decay, u64 n_steps, f32 m [n_params], f32 v
 *   [n_params]; last, u64 FNV-1a 64 (rlt_hash_bytes from RLT_HASH_SEED) of
 *   every byte before it.
 */
#include "nn/nn_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define NN_FILE_MAGIC "RLTUNENN"
#define NN_FILE_MAGIC_BYTES 8
#define NN_FILE_FLAG_ADAM 1u
#define NN_FILE_KNOWN_FLAGS NN_FILE_FLAG_ADAM
#define NN_FILE_CHECKSUM_BYTES 8
#define NN_FILE_ADAM_OPTS_BYTES (5 * 8 + 8) /* five f64 and the u64 step count */

/* Bytes of the part before the parameters, for n_layers layers. */
static size_t header_bytes(int n_layers) { return NN_FILE_MAGIC_BYTES + 4 * 4 + (size_t)n_layers * 8 + 8; }

/* Total bytes of a file; 0 when that does not fit in a size_t. */
static size_t file_bytes(int n_layers, uint64_t n_params, bool has_adam)
{
    uint64_t copies = has_adam ? 3 : 1; /* params, and m and v */
    if (n_params > (SIZE_MAX - 4096) / 16) return 0;
    uint64_t n = header_bytes(n_layers) + copies * 4 * n_params + NN_FILE_CHECKSUM_BYTES;
    if (has_adam) n += NN_FILE_ADAM_OPTS_BYTES;
    return (size_t)n;
}

/* ---- writing -------------------------------------------------------------- */

typedef struct writer {
    unsigned char *p;
    size_t at;
} writer;

static void put_u32(writer *w, uint32_t v)
{
    rlt_le_store(w->p + w->at, v, 4);
    w->at += 4;
}

static void put_u64(writer *w, uint64_t v)
{
    rlt_le_store(w->p + w->at, v, 8);
    w->at += 8;
}

static void put_f64(writer *w, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    put_u64(w, bits);
}

static void put_f32s(writer *w, const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &v[i], sizeof bits);
        put_u32(w, bits);
    }
}

rlt_status rlt_mlp_save_bytes(const rlt_mlp *m, const rlt_adam *adam, char **out_bytes, size_t *out_len,
                              rlt_diag *diag)
{
    RLT_ASSERT(m && out_bytes && out_len);
    *out_bytes = NULL;
    *out_len = 0;
    if (adam && adam->n_params != m->n_params)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "nn: cannot save an optimiser made for %zu parameters with a network of %zu", adam->n_params,
                        m->n_params);
    const rlt_mlp_spec *spec = &m->spec;
    size_t len = file_bytes(spec->n_layers, m->n_params, adam != NULL);
    RLT_ASSERT(len > 0); /* the network exists, so its parameters fit in memory */
    writer w = {rlt_malloc(len), 0};
    if (!w.p) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "nn: out of memory saving %zu bytes of weights", len);
    memcpy(w.p, NN_FILE_MAGIC, NN_FILE_MAGIC_BYTES);
    w.at = NN_FILE_MAGIC_BYTES;
    put_u32(&w, RLT_NN_FILE_VERSION);
    put_u32(&w, adam ? NN_FILE_FLAG_ADAM : 0);
    put_u32(&w, (uint32_t)spec->n_inputs);
    put_u32(&w, (uint32_t)spec->n_layers);
    for (int l = 0; l < spec->n_layers; l++) {
        put_u32(&w, (uint32_t)spec->layers[l].n_units);
        put_u32(&w, (uint32_t)spec->layers[l].act);
    }
    put_u64(&w, m->n_params);
    put_f32s(&w, m->params, m->n_params);
    if (adam) {
        put_f64(&w, adam->opts.lr);
        put_f64(&w, adam->opts.beta1);
        put_f64(&w, adam->opts.beta2);
        put_f64(&w, adam->opts.eps);
        put_f64(&w, adam->opts.weight_decay);
        put_u64(&w, (uint64_t)adam->n_steps);
        put_f32s(&w, adam->m, adam->n_params);
        put_f32s(&w, adam->v, adam->n_params);
    }
    put_u64(&w, rlt_hash_bytes(RLT_HASH_SEED, w.p, w.at));
    RLT_ASSERT(w.at == len);
    *out_bytes = (char *)w.p;
    *out_len = len;
    return RLT_STATUS_OK;
}

/* ---- reading -------------------------------------------------------------- */

/* A cursor over the bytes; every read is checked against the end. */
typedef struct reader {
    const unsigned char *p;
    size_t len;
    size_t at;
    const char *source; /* for messages */
} reader;

static rlt_status need(reader *r, size_t n, const char *what, rlt_diag *diag)
{
    if (r->len - r->at >= n) return RLT_STATUS_OK;
    return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                    "nn weights '%s': truncated: reading %s needs %zu bytes, the file has %zu", r->source, what,
                    r->at + n, r->len);
}

static uint32_t get_u32(reader *r)
{
    r->at += 4;
    return (uint32_t)rlt_le_load(r->p + r->at - 4, 4);
}

static uint64_t get_u64(reader *r)
{
    r->at += 8;
    return rlt_le_load(r->p + r->at - 8, 8);
}

static double get_f64(reader *r)
{
    uint64_t bits = get_u64(r);
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

static void get_f32s(reader *r, float *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t bits = get_u32(r);
        memcpy(&out[i], &bits, sizeof bits);
    }
}

/* Reads the header up to and including n_params into *spec, checking each
 * field as it comes. */
static rlt_status read_header(reader *r, rlt_mlp_spec *spec, bool *has_adam, rlt_diag *diag)
{
    const char *src = r->source;
    size_t magic_len = RLT_MIN(r->len, (size_t)NN_FILE_MAGIC_BYTES);
    if (memcmp(r->p, NN_FILE_MAGIC, magic_len) != 0)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                        "nn weights '%s': not an rltune weights file (it does not start with \"%s\")", src,
                        NN_FILE_MAGIC);
    rlt_status st = need(r, NN_FILE_MAGIC_BYTES + 4, "the magic and version", diag);
    if (st != RLT_STATUS_OK) return st;
    r->at = NN_FILE_MAGIC_BYTES;
    uint32_t version = get_u32(r);
    if (version != RLT_NN_FILE_VERSION)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                        "nn weights '%s': version %u is not supported (this build reads version %d)", src, version,
                        RLT_NN_FILE_VERSION);
    if ((st = need(r, 12, "the flags, n_inputs and n_layers", diag)) != RLT_STATUS_OK) return st;
    uint32_t flags = get_u32(r);
    uint32_t n_inputs = get_u32(r);
    uint32_t n_layers = get_u32(r);
    if (flags & ~NN_FILE_KNOWN_FLAGS)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                        "nn weights '%s': unknown flags 0x%x (version %d knows 0x1: optimiser state)", src, flags,
                        RLT_NN_FILE_VERSION);
    if (n_inputs < 1 || n_inputs > RLT_MLP_MAX_UNITS)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "nn weights '%s': n_inputs %u is outside 1..%d", src,
                        n_inputs, RLT_MLP_MAX_UNITS);
    if (n_layers < 1 || n_layers > RLT_MLP_MAX_LAYERS)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "nn weights '%s': n_layers %u is outside 1..%d", src,
                        n_layers, RLT_MLP_MAX_LAYERS);
    *spec = (rlt_mlp_spec){.n_inputs = (int)n_inputs, .n_layers = (int)n_layers};
    if ((st = need(r, (size_t)n_layers * 8, "the layers", diag)) != RLT_STATUS_OK) return st;
    for (uint32_t l = 0; l < n_layers; l++) {
        uint32_t units = get_u32(r);
        uint32_t act = get_u32(r);
        if (units < 1 || units > RLT_MLP_MAX_UNITS)
            return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "nn weights '%s': layer %u has n_units %u, outside 1..%d",
                            src, l, units, RLT_MLP_MAX_UNITS);
        if (act >= RLT_NN_ACT_COUNT)
            return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                            "nn weights '%s': layer %u has activation %u (known: 0 none, 1 relu, 2 tanh)", src, l,
                            act);
        spec->layers[l] = (rlt_mlp_layer){(int)units, (rlt_nn_act)act};
    }
    if ((st = need(r, 8, "n_params", diag)) != RLT_STATUS_OK) return st;
    uint64_t n_params = get_u64(r);
    size_t want = nn_spec_n_params(spec);
    if (n_params != want)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                        "nn weights '%s': mismatched sizes: the header says %llu parameters but its layers have %zu",
                        src, (unsigned long long)n_params, want);
    *has_adam = (flags & NN_FILE_FLAG_ADAM) != 0;
    return RLT_STATUS_OK;
}

/* Checks that n floats read from the file are finite (and >= 0 when
 * is_nonnegative), naming the first that is not. */
static rlt_status check_values(const reader *r, const rlt_mlp_spec *spec, const char *what, const float *v,
                               size_t n, bool is_nonnegative, rlt_diag *diag)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]) || (is_nonnegative && v[i] < 0)) {
            char name[96];
            nn_param_name(spec, i, name, sizeof name);
            return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "nn weights '%s': the %s of %s is %g: it must be %s",
                            r->source, what, name, (double)v[i], is_nonnegative ? "finite and >= 0" : "finite");
        }
    return RLT_STATUS_OK;
}

/* Reads the optimiser state after the parameters (sizes already checked). */
static rlt_status read_adam(reader *r, const rlt_mlp_spec *spec, size_t n_params, rlt_adam **out, rlt_diag *diag)
{
    rlt_adam_opts stored = {0};
    stored.lr = get_f64(r);
    stored.beta1 = get_f64(r);
    stored.beta2 = get_f64(r);
    stored.eps = get_f64(r);
    stored.weight_decay = get_f64(r);
    uint64_t n_steps = get_u64(r);
    rlt_adam_opts o;
    rlt_diag opts_diag = {0};
    if (nn_adam_opts_resolve(&stored, &o, &opts_diag) != RLT_STATUS_OK)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "nn weights '%s': bad optimiser options (%s)", r->source,
                        opts_diag.message);
    if (stored.lr == 0 || stored.beta1 == 0 || stored.beta2 == 0 || stored.eps == 0)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                        "nn weights '%s': bad optimiser options (lr, beta1, beta2 and eps must not be 0)", r->source);
    if (n_steps > INT64_MAX)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "nn weights '%s': optimiser step count %llu is too large",
                        r->source, (unsigned long long)n_steps);
    rlt_adam *a = NULL;
    rlt_status st = nn_adam_alloc(&o, n_params, &a, diag);
    if (st != RLT_STATUS_OK) return st;
    a->n_steps = (int64_t)n_steps;
    get_f32s(r, a->m, n_params);
    get_f32s(r, a->v, n_params);
    if ((st = check_values(r, spec, "optimiser's first moment", a->m, n_params, false, diag)) != RLT_STATUS_OK ||
        (st = check_values(r, spec, "optimiser's second moment", a->v, n_params, true, diag)) != RLT_STATUS_OK) {
        rlt_adam_destroy(a);
        return st;
    }
    *out = a;
    return RLT_STATUS_OK;
}

rlt_status rlt_mlp_load_bytes(const char *bytes, size_t len, const char *source, rlt_mlp **out,
                              rlt_adam **out_adam, rlt_diag *diag)
{
    RLT_ASSERT(out);
    *out = NULL;
    if (out_adam) *out_adam = NULL;
    rlt_status st = RLT_STATUS_OK;
    rlt_mlp *m = NULL;
    rlt_adam *a = NULL;
    if (!bytes) len = 0;
    reader r = {(const unsigned char *)bytes, len, 0, source ? source : "<bytes>"};
    static const unsigned char empty[1];
    if (!r.p) r.p = empty;

    rlt_mlp_spec spec;
    bool has_adam = false;
    st = read_header(&r, &spec, &has_adam, diag);
    if (st != RLT_STATUS_OK) goto cleanup;
    size_t n_params = nn_spec_n_params(&spec);
    size_t want = file_bytes(spec.n_layers, n_params, has_adam);
    if (want == 0 || len < want) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                      "nn weights '%s': truncated: the file has %zu bytes but its header describes %zu (%zu "
                      "parameters%s)",
                      r.source, len, want, n_params, has_adam ? " and optimiser state" : "");
        goto cleanup;
    }
    if (len > want) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                      "nn weights '%s': %zu trailing bytes: the header describes %zu bytes, the file has %zu",
                      r.source, len - want, want, len);
        goto cleanup;
    }
    uint64_t computed = rlt_hash_bytes(RLT_HASH_SEED, r.p, len - NN_FILE_CHECKSUM_BYTES);
    reader tail = r;
    tail.at = len - NN_FILE_CHECKSUM_BYTES;
    uint64_t stored = get_u64(&tail);
    if (stored != computed) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                      "nn weights '%s': checksum mismatch (stored %016llx, computed %016llx): the file is damaged",
                      r.source, (unsigned long long)stored, (unsigned long long)computed);
        goto cleanup;
    }
    st = nn_mlp_alloc(&spec, &m, diag);
    if (st != RLT_STATUS_OK) goto cleanup;
    RLT_ASSERT(m->n_params == n_params);
    get_f32s(&r, m->params, n_params);
    st = check_values(&r, &spec, "value", m->params, n_params, false, diag);
    if (st != RLT_STATUS_OK) goto cleanup;
    if (has_adam) {
        st = read_adam(&r, &spec, n_params, &a, diag);
        if (st != RLT_STATUS_OK) goto cleanup;
    }
    RLT_ASSERT(r.at == len - NN_FILE_CHECKSUM_BYTES);
    *out = m;
    m = NULL;
    if (out_adam) {
        *out_adam = a;
        a = NULL;
    }

cleanup:
    rlt_adam_destroy(a);
    rlt_mlp_destroy(m);
    return st;
}

/* ---- files ---------------------------------------------------------------- */

rlt_status rlt_mlp_save(const rlt_mlp *m, const rlt_adam *adam, const char *path, rlt_diag *diag)
{
    RLT_ASSERT(m && path);
    char *bytes = NULL;
    size_t len = 0;
    rlt_status st = rlt_mlp_save_bytes(m, adam, &bytes, &len, diag);
    if (st != RLT_STATUS_OK) goto cleanup;
    if (len > RLT_FILE_READ_MAX_BYTES) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "nn weights '%s': %zu bytes is more than the %d MiB a weights file may hold: not written", path,
                      len, RLT_FILE_READ_MAX_BYTES >> 20);
        goto cleanup;
    }
    st = rlt_file_write(path, bytes, len, diag);

cleanup:
    rlt_free(bytes);
    return st;
}

rlt_status rlt_mlp_load(const char *path, rlt_mlp **out, rlt_adam **out_adam, rlt_diag *diag)
{
    RLT_ASSERT(path && out);
    *out = NULL;
    if (out_adam) *out_adam = NULL;
    char *bytes = NULL;
    size_t len = 0;
    rlt_status st = rlt_file_read(path, &bytes, &len, diag);
    if (st == RLT_STATUS_OK) st = rlt_mlp_load_bytes(bytes, len, path, out, out_adam, diag);
    rlt_free(bytes);
    return st;
}
