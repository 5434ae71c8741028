/*
 * agent_file.c - the agent file, version 1 (agent_file.h; the layout is in
 * docs/formats.md, "Agent files"): named sections and a checksum, in
 * little-endian binary; created, filled, saved (rlt_agent_file_save),
 * loaded (rlt_agent_file_load / _load_bytes) and read section by section.
 *
 * Layout: magic "RLTUNEAG" (8 bytes), u32 version (1), u32 n_sections, then
 * per section u32 name_len, the name's bytes, u64 data_len, the data; last,
 * u64 FNV-1a 64 (rlt_hash_bytes from RLT_HASH_SEED) of every byte before
 * it. Two sections are always there: "tuner" (the saver's name) and
 * "knobs" (text the saver writes and reads: search/tuner_agent.c puts one
 * line "NAME SIZE\n" per knob of the space it learned on).
 * The reader checks every length against what is left before using it and
 * the checksum before anything else.
 */
#include "nn/agent_file.h"

#include <stdio.h>
#include <string.h>

#define AGENT_MAGIC "RLTUNEAG"
#define AGENT_MAGIC_BYTES 8
#define SECTION_TUNER "tuner"
#define SECTION_KNOBS "knobs"

typedef struct section {
    char name[RLT_AGENT_FILE_MAX_NAME + 1];
    char *data; /* owned; NUL-terminated past len, so text sections read as strings */
    size_t len;
} section;

struct rlt_agent_file {
    section *sections;
    int n_sections;
    char *source; /* owned */
};

static bool is_good_name(const char *name, size_t len)
{
    if (len < 1 || len > RLT_AGENT_FILE_MAX_NAME) return false;
    for (size_t i = 0; i < len; i++)
        if (name[i] < 0x21 || name[i] > 0x7e) return false;
    return true;
}

static const section *find(const rlt_agent_file *f, const char *name)
{
    for (int i = 0; i < f->n_sections; i++)
        if (strcmp(f->sections[i].name, name) == 0) return &f->sections[i];
    return NULL;
}

void rlt_agent_file_destroy(rlt_agent_file *f)
{
    if (!f) return;
    for (int i = 0; i < f->n_sections; i++) rlt_free(f->sections[i].data);
    rlt_free(f->sections);
    rlt_free(f->source);
    rlt_free(f);
}

static rlt_agent_file *file_new(const char *source)
{
    rlt_agent_file *f = rlt_calloc(1, sizeof *f);
    if (!f) return NULL;
    f->sections = rlt_calloc(RLT_AGENT_FILE_MAX_SECTIONS, sizeof *f->sections);
    f->source = rlt_strdup(source);
    if (!f->sections || !f->source) {
        rlt_agent_file_destroy(f);
        return NULL;
    }
    return f;
}

rlt_status rlt_agent_file_put_bytes(rlt_agent_file *f, const char *name, const void *data, size_t len,
                                    rlt_diag *diag)
{
    size_t name_len = strlen(name);
    if (!is_good_name(name, name_len))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "agent file: section name '%s' is not 1..%d printable characters without spaces", name,
                        RLT_AGENT_FILE_MAX_NAME);
    if (find(f, name)) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "agent file: section '%s' given twice", name);
    if (f->n_sections == RLT_AGENT_FILE_MAX_SECTIONS)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "agent file: more than %d sections",
                        RLT_AGENT_FILE_MAX_SECTIONS);
    section *s = &f->sections[f->n_sections];
    if (!(s->data = rlt_malloc(len + 1)))
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "agent file: out of memory for section '%s'", name);
    if (len) memcpy(s->data, data, len);
    s->data[len] = '\0';
    s->len = len;
    memcpy(s->name, name, name_len + 1);
    f->n_sections++;
    return RLT_STATUS_OK;
}

rlt_status rlt_agent_file_put_real(rlt_agent_file *f, const char *name, double v, rlt_diag *diag)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    unsigned char bytes[8];
    rlt_le_store(bytes, bits, 8);
    return rlt_agent_file_put_bytes(f, name, bytes, sizeof bytes, diag);
}

rlt_status rlt_agent_file_put_mlp(rlt_agent_file *f, const char *name, const rlt_mlp *m, const rlt_adam *adam,
                                  rlt_diag *diag)
{
    char *bytes = NULL;
    size_t len = 0;
    rlt_status st = rlt_mlp_save_bytes(m, adam, &bytes, &len, diag);
    if (st == RLT_STATUS_OK) st = rlt_agent_file_put_bytes(f, name, bytes, len, diag);
    rlt_free(bytes);
    return st;
}

rlt_status rlt_agent_file_create(const char *tuner, const char *knobs, rlt_agent_file **out, rlt_diag *diag)
{
    *out = NULL;
    if (!knobs) knobs = "";
    rlt_agent_file *f = file_new("<new>");
    if (!f) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "agent file: out of memory");
    rlt_status st;
    if ((st = rlt_agent_file_put_bytes(f, SECTION_TUNER, tuner, strlen(tuner), diag)) != RLT_STATUS_OK ||
        (st = rlt_agent_file_put_bytes(f, SECTION_KNOBS, knobs, strlen(knobs), diag)) != RLT_STATUS_OK) {
        rlt_agent_file_destroy(f);
        return st;
    }
    *out = f;
    return RLT_STATUS_OK;
}

/* ---- bytes ------------------------------------------------------------------ */

static void put_le(rlt_str *s, uint64_t v, int n_bytes)
{
    unsigned char b[8];
    rlt_le_store(b, v, n_bytes);
    rlt_str_appendn(s, (const char *)b, (size_t)n_bytes);
}

rlt_status rlt_agent_file_save(const rlt_agent_file *f, const char *path, rlt_diag *diag)
{
    rlt_str s;
    rlt_str_init(&s);
    rlt_str_appendn(&s, AGENT_MAGIC, AGENT_MAGIC_BYTES);
    put_le(&s, RLT_AGENT_FILE_VERSION, 4);
    put_le(&s, (uint64_t)f->n_sections, 4);
    for (int i = 0; i < f->n_sections; i++) {
        const section *sec = &f->sections[i];
        size_t name_len = strlen(sec->name);
        put_le(&s, name_len, 4);
        rlt_str_appendn(&s, sec->name, name_len);
        put_le(&s, sec->len, 8);
        rlt_str_appendn(&s, sec->data, sec->len);
    }
    if (s.has_failed) {
        rlt_str_free(&s);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "agent file '%s': out of memory", path);
    }
    put_le(&s, rlt_hash_bytes(RLT_HASH_SEED, s.data, s.len), 8);
    rlt_status st = s.has_failed ? rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "agent file '%s': out of memory", path)
                                 : rlt_file_write(path, s.data, s.len, diag);
    rlt_str_free(&s);
    return st;
}

/* A cursor over the bytes being read. */
typedef struct reader {
    const unsigned char *p;
    size_t len, at;
    const char *source;
} reader;

static rlt_status need(const reader *r, size_t n, const char *what, rlt_diag *diag)
{
    if (r->len - r->at >= n) return RLT_STATUS_OK;
    return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "agent file '%s': truncated at byte %zu reading %s", r->source,
                    r->at, what);
}

static uint64_t get_le(reader *r, int n_bytes)
{
    r->at += (size_t)n_bytes;
    return rlt_le_load(r->p + r->at - n_bytes, n_bytes);
}

rlt_status rlt_agent_file_load_bytes(const char *bytes, size_t len, const char *source, rlt_agent_file **out,
                                     rlt_diag *diag)
{
    *out = NULL;
    reader r = {(const unsigned char *)bytes, len, 0, source};
    if (len < AGENT_MAGIC_BYTES || memcmp(bytes, AGENT_MAGIC, AGENT_MAGIC_BYTES) != 0)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                        "agent file '%s': not an rltune agent file (it does not start with \"%s\")", source,
                        AGENT_MAGIC);
    if (len < AGENT_MAGIC_BYTES + 8 + 8)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "agent file '%s': truncated (%zu bytes)", source, len);
    uint64_t stored = rlt_le_load(r.p + len - 8, 8);
    if (stored != rlt_hash_bytes(RLT_HASH_SEED, bytes, len - 8))
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                        "agent file '%s': checksum mismatch (the file is damaged or truncated)", source);
    r.len = len - 8; /* the sections end where the checksum starts */
    r.at = AGENT_MAGIC_BYTES;
    uint64_t version = get_le(&r, 4);
    if (version != RLT_AGENT_FILE_VERSION)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                        "agent file '%s': version %llu is not supported (this build reads version %d)", source,
                        (unsigned long long)version, RLT_AGENT_FILE_VERSION);
    uint64_t n_sections = get_le(&r, 4);
    if (n_sections > RLT_AGENT_FILE_MAX_SECTIONS)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "agent file '%s': %llu sections (at most %d)", source,
                        (unsigned long long)n_sections, RLT_AGENT_FILE_MAX_SECTIONS);
    rlt_agent_file *f = file_new(source);
    if (!f) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "agent file '%s': out of memory", source);
    rlt_status st;
    for (uint64_t i = 0; i < n_sections; i++) {
        char name[RLT_AGENT_FILE_MAX_NAME + 1];
        if ((st = need(&r, 4, "a section's name length", diag)) != RLT_STATUS_OK) goto fail;
        uint64_t name_len = get_le(&r, 4);
        if (name_len < 1 || name_len > RLT_AGENT_FILE_MAX_NAME) {
            st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "agent file '%s': section %llu's name is %llu bytes (1..%d)",
                          source, (unsigned long long)i, (unsigned long long)name_len, RLT_AGENT_FILE_MAX_NAME);
            goto fail;
        }
        if ((st = need(&r, name_len + 8, "a section's name and size", diag)) != RLT_STATUS_OK) goto fail;
        memcpy(name, r.p + r.at, name_len);
        name[name_len] = '\0';
        r.at += name_len;
        if (!is_good_name(name, name_len)) {
            st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                          "agent file '%s': section %llu's name has a byte that is not printable", source,
                          (unsigned long long)i);
            goto fail;
        }
        uint64_t data_len = get_le(&r, 8);
        if (data_len > r.len - r.at) {
            st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                          "agent file '%s': section '%s' says %llu bytes, only %zu are left", source, name,
                          (unsigned long long)data_len, r.len - r.at);
            goto fail;
        }
        rlt_diag sub = {0};
        if ((st = rlt_agent_file_put_bytes(f, name, r.p + r.at, (size_t)data_len, &sub)) != RLT_STATUS_OK) {
            if (st != RLT_STATUS_OUT_OF_MEMORY) st = RLT_STATUS_PARSE_ERROR;
            rlt_fail(diag, st, "agent file '%s': %s", source, sub.message);
            goto fail;
        }
        r.at += (size_t)data_len;
    }
    if (r.at != r.len) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "agent file '%s': %zu bytes after the last section", source,
                      r.len - r.at);
        goto fail;
    }
    const section *tuner = find(f, SECTION_TUNER), *knobs = find(f, SECTION_KNOBS);
    if (!tuner || !knobs || tuner->len == 0 || strlen(tuner->data) != tuner->len) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "agent file '%s': no tuner name or knobs section", source);
        goto fail;
    }
    *out = f;
    return RLT_STATUS_OK;
fail:
    rlt_agent_file_destroy(f);
    return st;
}

rlt_status rlt_agent_file_load(const char *path, rlt_agent_file **out, rlt_diag *diag)
{
    *out = NULL;
    char *text = NULL;
    size_t len = 0;
    rlt_status st = rlt_file_read(path, &text, &len, diag);
    if (st == RLT_STATUS_OK) st = rlt_agent_file_load_bytes(text, len, path, out, diag);
    rlt_free(text);
    return st;
}

/* ---- reading sections ------------------------------------------------------- */

const char *rlt_agent_file_tuner(const rlt_agent_file *f) { return find(f, SECTION_TUNER)->data; }

const char *rlt_agent_file_source(const rlt_agent_file *f) { return f->source; }

const char *rlt_agent_file_knobs(const rlt_agent_file *f) { return find(f, SECTION_KNOBS)->data; }

bool rlt_agent_file_has(const rlt_agent_file *f, const char *name) { return find(f, name) != NULL; }

rlt_status rlt_agent_file_get_bytes(const rlt_agent_file *f, const char *name, const char **out_data,
                                    size_t *out_len, rlt_diag *diag)
{
    const section *s = find(f, name);
    if (!s)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "agent file '%s': no section '%s' (saved by %s)",
                        f->source, name, rlt_agent_file_tuner(f));
    *out_data = s->data;
    *out_len = s->len;
    return RLT_STATUS_OK;
}

rlt_status rlt_agent_file_get_real(const rlt_agent_file *f, const char *name, double *out, rlt_diag *diag)
{
    const char *data = NULL;
    size_t len = 0;
    rlt_status st = rlt_agent_file_get_bytes(f, name, &data, &len, diag);
    if (st != RLT_STATUS_OK) return st;
    if (len != 8)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "agent file '%s': section '%s' is not a number",
                        f->source, name);
    uint64_t bits = rlt_le_load((const unsigned char *)data, 8);
    memcpy(out, &bits, sizeof *out);
    return RLT_STATUS_OK;
}

rlt_status rlt_agent_file_get_mlp(const rlt_agent_file *f, const char *name, const rlt_mlp_spec *want,
                                  rlt_mlp **out, rlt_adam **out_adam, rlt_diag *diag)
{
    *out = NULL;
    if (out_adam) *out_adam = NULL;
    const char *data = NULL;
    size_t len = 0;
    rlt_status st = rlt_agent_file_get_bytes(f, name, &data, &len, diag);
    if (st != RLT_STATUS_OK) return st;
    char where[512];
    snprintf(where, sizeof where, "%s, section %s", f->source, name);
    rlt_mlp *m = NULL;
    rlt_adam *adam = NULL;
    if ((st = rlt_mlp_load_bytes(data, len, where, &m, out_adam ? &adam : NULL, diag)) != RLT_STATUS_OK) return st;
    if (want && !rlt_mlp_spec_equal(want, rlt_mlp_get_spec(m))) {
        const rlt_mlp_spec *got = rlt_mlp_get_spec(m);
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "agent file '%s': network %s has %d inputs, %d layers and %d outputs; this run's has %d, %d "
                      "and %d (other hyper-parameters or another kind of space)",
                      f->source, name, got->n_inputs, got->n_layers, rlt_mlp_n_outputs(m), want->n_inputs,
                      want->n_layers, want->layers[want->n_layers - 1].n_units);
        rlt_mlp_destroy(m);
        rlt_adam_destroy(adam);
        return st;
    }
    *out = m;
    if (out_adam) *out_adam = adam;
    return RLT_STATUS_OK;
}
