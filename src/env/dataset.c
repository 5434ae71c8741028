/*
 * dataset.c - state datasets of the LoopTune environment (docs/env.md,
 * "State datasets"): the evaluations of the states near a start state,
 * measured once and then replayed by envs that look states up instead of
 * measuring them (rlt_env_opts.replay_path).
 *
 * Entry points: rlt_env_dataset_make (walk the reachable states breadth
 * first, evaluate them in batches through an env, write the file);
 * env_dataset_load / env_dataset_find (the file read into a table keyed by
 * the state hash, which env.c consults).
 *
 * The file is text, format v1: a header line, `key value` lines ending with
 * `states N`, then N lines `STATUS<TAB>GFLOPS<TAB>SCHEDULE[<TAB>MESSAGE]`,
 * SCHEDULE the state's kernel schedule (rlt_env_schedule's steps, joined by
 * "; "; "-" for none). Keys are schedules, not hashes, so a file stays
 * readable, and valid for as long as the env writes the same schedules;
 * the reader computes the hashes.
 */
#include "env/env.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DATASET_HEADER "# rltune env states v"
#define STEP_SEP "; "

/* ---- schedules on one line ----------------------------------------------- */

/* The kernel schedule of a state's nest, its steps joined by "; " ("" for
 * none), appended to out. OUT_OF_MEMORY only. */
static rlt_status kernel_line(const rlt_nest *nest, rlt_str *out, rlt_diag *diag)
{
    rlt_sched *sched = NULL;
    rlt_status st = env_kernel_schedule_build(nest, &sched, diag);
    if (st != RLT_STATUS_OK) return st;
    for (int i = 0; i < sched->n_steps; i++) {
        if (i) rlt_str_append(out, STEP_SEP);
        rlt_step_print(&sched->steps[i], out);
    }
    rlt_sched_destroy(sched);
    return out->has_failed ? rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory printing a schedule") : st;
}

/* ---- the table ------------------------------------------------------------ */

struct env_dataset {
    char *path;               /* owned */
    int n_threads;
    double peak_gflops;
    int n_entries;
    env_dataset_entry *entries; /* owned; their messages too (but the shared "") */
    int *slots;               /* open addressing over entries' hashes: index, -1 empty; owned */
    size_t n_slots;           /* a power of two, at least twice n_entries */
};

static const char no_message[] = "";

void env_dataset_destroy(env_dataset *ds)
{
    if (!ds) return;
    for (int i = 0; i < ds->n_entries; i++)
        if (ds->entries[i].message != no_message) rlt_free((char *)ds->entries[i].message);
    rlt_free(ds->entries);
    rlt_free(ds->slots);
    rlt_free(ds->path);
    rlt_free(ds);
}

const env_dataset_entry *env_dataset_find(const env_dataset *ds, uint64_t hash)
{
    for (size_t i = (size_t)hash & (ds->n_slots - 1);; i = (i + 1) & (ds->n_slots - 1)) {
        if (ds->slots[i] < 0) return NULL;
        if (ds->entries[ds->slots[i]].hash == hash) return &ds->entries[ds->slots[i]];
    }
}

const char *env_dataset_path(const env_dataset *ds) { return ds->path; }
int env_dataset_n_threads(const env_dataset *ds) { return ds->n_threads; }
double env_dataset_peak_gflops(const env_dataset *ds) { return ds->peak_gflops; }
int env_dataset_n_states(const env_dataset *ds) { return ds->n_entries; }

/* ---- reading -------------------------------------------------------------- */

/* The reader's position, for messages. */
typedef struct reader {
    const char *path;
    char *p;      /* the next line */
    int line_no;  /* of the line last taken */
} reader;

/* The next line (NUL-terminated in place, '\r' dropped), or NULL at the end. */
static char *next_line(reader *r)
{
    if (!*r->p) return NULL;
    char *line = r->p;
    char *end = strchr(line, '\n');
    if (end) {
        *end = '\0';
        r->p = end + 1;
    } else {
        r->p = line + strlen(line);
    }
    size_t n = strlen(line);
    if (n > 0 && line[n - 1] == '\r') line[n - 1] = '\0';
    r->line_no++;
    return line;
}

static rlt_status bad(const reader *r, rlt_diag *diag, const char *fmt, const char *what)
{
    char msg[512];
    snprintf(msg, sizeof msg, fmt, what);
    return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s:%d: %s", r->path, r->line_no, msg);
}

/* The header's values. */
typedef struct header {
    char *op;        /* borrowed from the text */
    long n_threads;
    double peak_gflops;
    long n_states;
} header;

/* Known keys: the reader needs op, threads, peak_gflops and states; the
 * others say how the dataset was made. */
static const char *const header_keys[] = {"op", "threads", "peak_gflops", "start", "depth", "depth_complete",
                                          "seed", "measured", "cpu", "build", "states"};
#define N_HEADER_KEYS (int)(sizeof header_keys / sizeof header_keys[0])

static bool parse_long(const char *s, long lo, long hi, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

static bool parse_gflops(const char *s, double *out)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || *end || !isfinite(v) || v < 0) return false;
    *out = v;
    return true;
}

static rlt_status read_header(reader *r, header *h, rlt_diag *diag)
{
    char *line = next_line(r);
    int digits_at = -1;
    if (line) sscanf(line, DATASET_HEADER "%n", &digits_at);
    if (!line || digits_at < 0)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                        "%s: not a state dataset (its first line is not '" DATASET_HEADER "%d'; rltune gen-dataset "
                        "--kind states makes them)",
                        r->path, RLT_ENV_DATASET_VERSION);
    long version = 0;
    if (!parse_long(line + digits_at, 0, 1000000, &version) || version != RLT_ENV_DATASET_VERSION)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                        "%s:1: state dataset format v%.20s is not supported (this rltune reads v%d)", r->path,
                        line + digits_at, RLT_ENV_DATASET_VERSION);
    bool seen[N_HEADER_KEYS] = {false};
    while ((line = next_line(r)) != NULL) {
        if (line[0] == '#') continue;
        char *value = strchr(line, ' ');
        if (!value || strchr(line, '\t'))
            return bad(r, diag, "'%.100s' is not a 'key value' line of the header (which ends with 'states N')", line);
        *value++ = '\0';
        int k = 0;
        while (k < N_HEADER_KEYS && strcmp(line, header_keys[k]) != 0) k++;
        if (k == N_HEADER_KEYS)
            return bad(r, diag,
                       "unknown header key '%.64s' (keys: op, threads, peak_gflops, start, depth, depth_complete, "
                       "seed, measured, cpu, build, states)",
                       line);
        if (seen[k]) return bad(r, diag, "header key '%s' given twice", header_keys[k]);
        seen[k] = true;
        const char *key = header_keys[k];
        if (strcmp(key, "op") == 0) {
            h->op = value;
        } else if (strcmp(key, "threads") == 0) {
            if (!parse_long(value, 1, RLT_MAX_THREADS, &h->n_threads))
                return bad(r, diag, "threads '%.64s' is not a whole number from 1 to 256", value);
        } else if (strcmp(key, "peak_gflops") == 0) {
            if (!parse_gflops(value, &h->peak_gflops) || h->peak_gflops <= 0)
                return bad(r, diag, "peak_gflops '%.64s' is not a number above 0", value);
        } else if (strcmp(key, "states") == 0) {
            if (!parse_long(value, 1, RLT_ENV_DATASET_MAX_STATES, &h->n_states))
                return bad(r, diag, "states '%.64s' is not a whole number from 1 to 100000", value);
            break;
        }
    }
    for (int k = 0; k < N_HEADER_KEYS; k++)
        if (!seen[k] && (k < 3 || k == N_HEADER_KEYS - 1))
            return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s: the header has no '%s' line", r->path,
                            header_keys[k]);
    return RLT_STATUS_OK;
}

/* Reads one state's line into e (message owned by e unless no_message) and
 * its state's nest into *nest. */
static rlt_status read_entry(reader *r, char *line, const rlt_op *op, env_dataset_entry *e, rlt_nest *nest,
                             rlt_diag *diag)
{
    char *fields[4] = {NULL};
    int n_fields = 0;
    for (char *p = line; n_fields < 4;) {
        fields[n_fields++] = p;
        char *tab = strchr(p, '\t');
        if (!tab) break;
        *tab = '\0';
        p = tab + 1;
    }
    if (n_fields < 3)
        return bad(r, diag, "'%.100s' is not a state line (STATUS<TAB>GFLOPS<TAB>SCHEDULE[<TAB>MESSAGE])", line);
    rlt_status status = rlt_status_from_str(fields[0]);
    bool is_result = status == RLT_STATUS_OK || (status >= RLT_STATUS_BUILD_ERROR && status <= RLT_STATUS_WRONG_ANSWER);
    if (!is_result)
        return bad(r, diag,
                   "status '%.64s' is not a kernel's result (OK, BUILD_ERROR, BUILD_TIMEOUT, RUN_ERROR, "
                   "RUN_TIMEOUT, WRONG_ANSWER)",
                   fields[0]);
    double gflops = 0;
    if (!parse_gflops(fields[1], &gflops)) return bad(r, diag, "GFLOP/s '%.64s' is not a number >= 0", fields[1]);
    /* the schedule: steps joined by "; " back into lines */
    const char *field = strcmp(fields[2], "-") == 0 ? "" : fields[2];
    rlt_str text, printed;
    rlt_str_init(&text);
    rlt_str_init(&printed);
    rlt_sched *sched = NULL;
    rlt_status st = RLT_STATUS_OK;
    for (const char *p = field; *p;) {
        const char *sep = strstr(p, STEP_SEP);
        size_t n = sep ? (size_t)(sep - p) : strlen(p);
        rlt_str_appendn(&text, p, n);
        rlt_str_append(&text, "\n");
        p = sep ? sep + strlen(STEP_SEP) : p + n;
    }
    if (text.has_failed) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading %s", r->path);
        goto cleanup;
    }
    if ((st = rlt_sched_parse(text.data ? text.data : "", "the state's schedule", &sched, diag)) == RLT_STATUS_OK &&
        (st = rlt_sched_apply(sched, op, nest, diag)) == RLT_STATUS_OK) {
        env_nest_drop_placed(nest); /* the env places the accumulator and the packs itself */
        st = env_nest_check_expressible(nest, diag);
    }
    if (st == RLT_STATUS_OUT_OF_MEMORY) goto cleanup;
    if (st != RLT_STATUS_OK) {
        rlt_diag_prefix(diag, "%s:%d", r->path, r->line_no);
        st = RLT_STATUS_PARSE_ERROR;
        if (diag) diag->status = st;
        goto cleanup;
    }
    if ((st = kernel_line(nest, &printed, diag)) != RLT_STATUS_OK) goto cleanup;
    const char *env_line = printed.data ? printed.data : "";
    if (strcmp(env_line, field) != 0) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                      "%s:%d: this rltune's env measures that state as '%.300s', the file has '%.300s': the dataset "
                      "was made by another version of rltune; make it again",
                      r->path, r->line_no, env_line[0] ? env_line : "-", fields[2]);
        goto cleanup;
    }
    e->hash = rlt_nest_hash(nest);
    e->status = status;
    e->gflops = status == RLT_STATUS_OK ? gflops : 0.0;
    e->message = no_message;
    if (n_fields == 4 && fields[3][0] && !(e->message = rlt_strndup(fields[3], 255))) {
        e->message = no_message;
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading %s", r->path);
    }

cleanup:
    rlt_sched_destroy(sched);
    rlt_str_free(&printed);
    rlt_str_free(&text);
    return st;
}

rlt_status env_dataset_load(const char *path, const rlt_op *op, env_dataset **out, rlt_diag *diag)
{
    *out = NULL;
    char *text = NULL;
    rlt_op *file_op = NULL;
    env_dataset *ds = NULL;
    rlt_nest *nest = NULL;
    rlt_status st = rlt_text_file_read(path, &text, diag);
    if (st != RLT_STATUS_OK) {
        rlt_diag_prefix(diag, "cannot read the replay dataset");
        return st;
    }
    reader r = {.path = path, .p = text};
    header h = {0};
    if ((st = read_header(&r, &h, diag)) != RLT_STATUS_OK) goto cleanup;
    if ((st = rlt_op_parse(h.op, &file_op, diag)) != RLT_STATUS_OK) {
        if (st != RLT_STATUS_OUT_OF_MEMORY) {
            rlt_diag_prefix(diag, "%s: its op", path);
            st = RLT_STATUS_PARSE_ERROR;
            if (diag) diag->status = st;
        }
        goto cleanup;
    }
    if (strcmp(rlt_op_spec(file_op), rlt_op_spec(op)) != 0) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "the replay dataset %s is of %s, not of the env's op %s",
                      path, rlt_op_spec(file_op), rlt_op_spec(op));
        goto cleanup;
    }
    ds = rlt_calloc(1, sizeof *ds);
    nest = rlt_malloc(sizeof *nest);
    if (!ds || !nest || !(ds->path = rlt_strdup(path)) ||
        !(ds->entries = rlt_calloc((size_t)h.n_states, sizeof *ds->entries))) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading %s", path);
        goto cleanup;
    }
    ds->n_threads = (int)h.n_threads;
    ds->peak_gflops = h.peak_gflops;
    for (ds->n_slots = 16; ds->n_slots < 2 * (size_t)h.n_states;) ds->n_slots *= 2;
    if (!(ds->slots = rlt_malloc(ds->n_slots * sizeof *ds->slots))) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading %s", path);
        goto cleanup;
    }
    for (size_t i = 0; i < ds->n_slots; i++) ds->slots[i] = -1;
    int *first_line = rlt_malloc((size_t)h.n_states * sizeof *first_line);
    if (!first_line) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading %s", path);
        goto cleanup;
    }
    char *line;
    while (st == RLT_STATUS_OK && (line = next_line(&r)) != NULL) {
        if (!line[0]) continue;
        if (ds->n_entries == h.n_states) {
            char count[32];
            snprintf(count, sizeof count, "%ld", h.n_states);
            st = bad(&r, diag, "more states than the header's 'states %s'", count);
            break;
        }
        env_dataset_entry *e = &ds->entries[ds->n_entries];
        if ((st = read_entry(&r, line, op, e, nest, diag)) != RLT_STATUS_OK) break;
        size_t i = (size_t)e->hash & (ds->n_slots - 1);
        while (ds->slots[i] >= 0 && ds->entries[ds->slots[i]].hash != e->hash) i = (i + 1) & (ds->n_slots - 1);
        if (ds->slots[i] >= 0) {
            char msg[64];
            snprintf(msg, sizeof msg, "%d", first_line[ds->slots[i]]);
            if (e->message != no_message) rlt_free((char *)e->message);
            st = bad(&r, diag, "the same state as line %s", msg);
            break;
        }
        first_line[ds->n_entries] = r.line_no;
        ds->slots[i] = ds->n_entries++;
    }
    rlt_free(first_line);
    if (st == RLT_STATUS_OK && ds->n_entries != h.n_states)
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s: %d states, the header says %ld (a truncated file?)", path,
                      ds->n_entries, h.n_states);
    if (st != RLT_STATUS_OK) goto cleanup;
    *out = ds;
    ds = NULL;

cleanup:
    env_dataset_destroy(ds);
    rlt_free(nest);
    rlt_op_destroy(file_op);
    rlt_free(text);
    return st;
}

/* ---- making: the walk ------------------------------------------------------ */

/* A node of the walk: a nest and a cursor on it (transitions depend on
 * nothing else), and how it was first reached. */
typedef struct walk_node {
    uint64_t hash;    /* of the nest */
    int cursor;
    int parent;       /* nest index of the node it was reached from; -1 for the start */
    int parent_cursor;
    int action;
} walk_node;

/* A set of 64-bit keys with an int each (open addressing, at most half full). */
typedef struct key_table {
    uint64_t *keys;
    int *values;      /* -1: empty slot */
    size_t n_slots, n_used;
} key_table;

static void key_table_free(key_table *t)
{
    rlt_free(t->keys);
    rlt_free(t->values);
    memset(t, 0, sizeof *t);
}

/* The slot of key: where it is, or the empty slot where it would go. */
static size_t key_table_slot(const key_table *t, uint64_t key)
{
    size_t i = (size_t)(key ^ (key >> 29)) & (t->n_slots - 1);
    while (t->values[i] >= 0 && t->keys[i] != key) i = (i + 1) & (t->n_slots - 1);
    return i;
}

static int key_table_get(const key_table *t, uint64_t key)
{
    if (!t->n_slots) return -1;
    return t->values[key_table_slot(t, key)];
}

/* Puts key -> value (value >= 0) unless the key is there; false when out of memory. */
static bool key_table_put(key_table *t, uint64_t key, int value)
{
    if (2 * (t->n_used + 1) > t->n_slots) {
        key_table grown = {.n_slots = t->n_slots ? 2 * t->n_slots : 1024};
        grown.keys = rlt_malloc(grown.n_slots * sizeof *grown.keys);
        grown.values = rlt_malloc(grown.n_slots * sizeof *grown.values);
        if (!grown.keys || !grown.values) {
            key_table_free(&grown);
            return false;
        }
        for (size_t i = 0; i < grown.n_slots; i++) grown.values[i] = -1;
        for (size_t i = 0; i < t->n_slots; i++)
            if (t->values[i] >= 0) {
                size_t j = key_table_slot(&grown, t->keys[i]);
                grown.keys[j] = t->keys[i];
                grown.values[j] = t->values[i];
                grown.n_used++;
            }
        key_table_free(t);
        *t = grown;
    }
    size_t i = key_table_slot(t, key);
    if (t->values[i] >= 0) return true;
    t->keys[i] = key;
    t->values[i] = value;
    t->n_used++;
    return true;
}

/* A node's key: the nest's hash mixed with the cursor (RLT_ENV_MAX_LOOPS
 * cursor positions). */
static uint64_t node_key(uint64_t hash, int cursor) { return (hash * 0x9e3779b97f4a7c15ull) ^ (uint64_t)cursor; }

typedef struct walk {
    rlt_nest *nests;   /* found, in the walk's order (the start first); owned */
    int *level_of;     /* the step count each was first reached at; owned */
    int n_nests, cap_nests;
    key_table nest_index;  /* nest hash -> index into nests */
    key_table seen;        /* node_key of every node reached */
    walk_node *level, *next; /* the nodes of this level and of the next; owned */
    int n_level, n_next, cap_level, cap_next;
} walk;

static void walk_free(walk *w)
{
    rlt_free(w->nests);
    rlt_free(w->level_of);
    key_table_free(&w->nest_index);
    key_table_free(&w->seen);
    rlt_free(w->level);
    rlt_free(w->next);
}

static bool grow(void **items, int *cap, int need, size_t item_size)
{
    if (need <= *cap) return true;
    int n = *cap ? *cap : 64;
    while (n < need) n *= 2;
    void *p = rlt_realloc(*items, (size_t)n * item_size);
    if (!p) return false;
    *items = p;
    *cap = n;
    return true;
}

/* The state of a node: nest number `nest` (its hash `hash`), the cursor. */
static void node_state(const walk *w, int nest, uint64_t hash, int cursor, env_state *out)
{
    memset(out, 0, sizeof *out);
    out->nest = w->nests[nest];
    out->hash = hash;
    out->cursor = cursor;
    for (int k = 0; k < RLT_ENV_HISTORY; k++) out->history[k] = -1;
}

/* Room for one more nest (both arrays); false when out of memory. */
static bool nests_grow(walk *w)
{
    if (w->n_nests < w->cap_nests) return true;
    int n = w->cap_nests ? 2 * w->cap_nests : 64;
    rlt_nest *nests = rlt_realloc(w->nests, (size_t)n * sizeof *nests);
    if (!nests) return false;
    w->nests = nests;
    int *level_of = rlt_realloc(w->level_of, (size_t)n * sizeof *level_of);
    if (!level_of) return false;
    w->level_of = level_of;
    w->cap_nests = n;
    return true;
}

static rlt_status add_nest(walk *w, const rlt_nest *nest, uint64_t hash, int level, rlt_diag *diag)
{
    if (!nests_grow(w) || !key_table_put(&w->nest_index, hash, w->n_nests))
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory walking the env's states (%d found)",
                        w->n_nests);
    w->nests[w->n_nests] = *nest;
    w->level_of[w->n_nests++] = level;
    return RLT_STATUS_OK;
}

/* What the walk found: how many states before a cut, and the depth to
 * which it has every state. */
typedef struct walk_result {
    int n_found;
    int depth_complete;
} walk_result;

static int int_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Walks breadth first from `start` (cursor 0) up to `depth` steps: every
 * action but stop from every node of a level gives the next level's nodes;
 * the nests they reach that are new join w->nests, unless that would pass
 * max_states: then a seeded random subset of the level's new nests fills
 * the rest and the walk ends. */
static rlt_status walk_states(walk *w, const rlt_nest *start, int depth, int max_states, uint64_t seed,
                              walk_result *out, rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    env_state *in = rlt_malloc(sizeof *in), *next = rlt_malloc(sizeof *next);
    int *fresh = NULL, n_fresh = 0, cap_fresh = 0;
    key_table fresh_index = {0};
    uint64_t h0 = rlt_nest_hash(start);
    out->n_found = 1;
    out->depth_complete = depth;
    if (!in || !next || !grow((void **)&w->level, &w->cap_level, 1, sizeof *w->level) ||
        !key_table_put(&w->seen, node_key(h0, 0), 0)) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory walking the env's states");
        goto cleanup;
    }
    if ((st = add_nest(w, start, h0, 0, diag)) != RLT_STATUS_OK) goto cleanup;
    w->level[0] = (walk_node){.hash = h0, .cursor = 0, .parent = -1};
    w->n_level = 1;
    for (int step = 1; step <= depth && w->n_level > 0; step++) {
        /* the next level's nodes, and the level's new nests (as the first
         * node that reached each: fresh[] indexes next[]) */
        w->n_next = 0;
        n_fresh = 0;
        key_table_free(&fresh_index);
        for (int k = 0; k < w->n_level; k++) {
            const walk_node *node = &w->level[k];
            int nest = key_table_get(&w->nest_index, node->hash);
            RLT_ASSERT(nest >= 0);
            node_state(w, nest, node->hash, node->cursor, in);
            for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) {
                if (a == RLT_ENV_ACTION_STOP || env_action_apply(in, a, next, NULL) != RLT_STATUS_OK) continue;
                uint64_t h = env_action_changes_nest(a) ? rlt_nest_hash(&next->nest) : in->hash;
                uint64_t key = node_key(h, next->cursor);
                if (key_table_get(&w->seen, key) >= 0) continue;
                if (!key_table_put(&w->seen, key, 0) ||
                    !grow((void **)&w->next, &w->cap_next, w->n_next + 1, sizeof *w->next)) {
                    st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory walking the env's states");
                    goto cleanup;
                }
                w->next[w->n_next] = (walk_node){.hash = h, .cursor = next->cursor, .parent = nest,
                                                 .parent_cursor = node->cursor, .action = a};
                if (key_table_get(&w->nest_index, h) < 0 && key_table_get(&fresh_index, h) < 0) {
                    if (!key_table_put(&fresh_index, h, w->n_next) ||
                        !grow((void **)&fresh, &cap_fresh, n_fresh + 1, sizeof *fresh)) {
                        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory walking the env's states");
                        goto cleanup;
                    }
                    fresh[n_fresh++] = w->n_next;
                }
                w->n_next++;
            }
        }
        out->n_found = w->n_nests + n_fresh;
        int n_keep = n_fresh;
        if (w->n_nests + n_fresh > max_states) {
            /* a seeded partial Fisher-Yates shuffle picks the survivors,
             * kept in the order the walk found them */
            n_keep = max_states - w->n_nests;
            rlt_rng rng;
            rlt_rng_seed(&rng, seed ^ 0x656e762d73746174ull);
            for (int i = 0; i < n_keep; i++) {
                int j = i + (int)rlt_rng_below(&rng, (uint64_t)(n_fresh - i));
                int t = fresh[i];
                fresh[i] = fresh[j];
                fresh[j] = t;
            }
            qsort(fresh, (size_t)n_keep, sizeof *fresh, int_cmp);
            out->depth_complete = step - 1;
        }
        for (int i = 0; i < n_keep; i++) {
            const walk_node *node = &w->next[fresh[i]];
            node_state(w, node->parent, 0, node->parent_cursor, in); /* the hash is not read: a nest changes */
            st = env_action_apply(in, node->action, next, diag);
            RLT_ASSERT(st == RLT_STATUS_OK);
            if ((st = add_nest(w, &next->nest, node->hash, step, diag)) != RLT_STATUS_OK) goto cleanup;
        }
        if (n_keep < n_fresh) break;
        /* the next level: its nodes whose nests were kept */
        walk_node *t = w->level;
        w->level = w->next;
        w->next = t;
        int cap = w->cap_level;
        w->cap_level = w->cap_next;
        w->cap_next = cap;
        w->n_level = w->n_next;
    }

cleanup:
    key_table_free(&fresh_index);
    rlt_free(fresh);
    rlt_free(next);
    rlt_free(in);
    return st;
}

/* ---- making: evaluating and writing ------------------------------------- */

/* A message on one line of the file: tabs and line breaks as spaces. */
static void append_message(rlt_str *out, const char *msg)
{
    for (const char *p = msg; *p; p++) {
        char c = *p == '\t' || *p == '\n' || *p == '\r' ? ' ' : *p;
        rlt_str_appendn(out, &c, 1);
    }
}

static rlt_status check_opts(const rlt_env_dataset_opts *o, rlt_diag *diag)
{
    if (o->depth < 0 || o->depth > RLT_ENV_DATASET_MAX_DEPTH)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "depth %d is out of range: 1 to %d steps (0: %d)",
                        o->depth, RLT_ENV_DATASET_MAX_DEPTH, RLT_ENV_DATASET_DEFAULT_DEPTH);
    if (o->max_states < 0 || o->max_states > RLT_ENV_DATASET_MAX_STATES)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "max_states %d is out of range: 1 to %d (0: %d)",
                        o->max_states, RLT_ENV_DATASET_MAX_STATES, RLT_ENV_DATASET_DEFAULT_MAX_STATES);
    if (o->batch_size < 0 || o->batch_size > RLT_ENV_DATASET_MAX_BATCH)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "batch_size %d is out of range: 1 to %d (0: %d)",
                        o->batch_size, RLT_ENV_DATASET_MAX_BATCH, RLT_ENV_DATASET_DEFAULT_BATCH);
    if (o->env.replay_path)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "a state dataset is measured, not replayed: env.replay_path must be NULL");
    if (o->env.max_steps)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "env.max_steps must be 0 (the walk's depth is opts.depth, %d)", o->depth);
    return RLT_STATUS_OK;
}

/* The file's text: the header, then the first n_done states. */
static rlt_status dataset_text(const rlt_env *env, const rlt_env_dataset_opts *o, const walk *w,
                               const env_state *evals, int n_done, int depth_complete, rlt_str *out,
                               rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    const rlt_nest *start = &w->nests[0];
    rlt_str_printf(out, DATASET_HEADER "%d\n", RLT_ENV_DATASET_VERSION);
    rlt_str_printf(out, "op %s\n", rlt_op_spec(start->op));
    rlt_str_printf(out, "threads %d\n", o->env.n_threads > 0 ? o->env.n_threads : 1);
    rlt_str_printf(out, "peak_gflops %.17g\n", rlt_env_peak_gflops(env));
    rlt_str_append(out, "start ");
    size_t at = out->len;
    if ((st = kernel_line(start, out, diag)) != RLT_STATUS_OK) return st;
    if (out->len == at) rlt_str_append(out, "-");
    rlt_str_printf(out, "\ndepth %d\n", o->depth);
    rlt_str_printf(out, "depth_complete %d\n", depth_complete);
    rlt_str_printf(out, "seed %" PRIu64 "\n", o->seed);
    if (o->env.evaluate) {
        rlt_str_append(out, "measured evaluator\n");
    } else {
        rlt_machine m;
        rlt_machine_detect(&m);
        rlt_build_opts b = {.cc = o->env.cc, .cflags = o->env.cflags};
        char *cmd = rlt_build_command(&b, o->env.n_threads > 1);
        rlt_str_printf(out, "measured live, %d sample%s of at least %g ms\ncpu %s\nbuild %s\n",
                       o->env.repeat > 0 ? o->env.repeat : 3, o->env.repeat == 1 ? "" : "s",
                       o->env.min_repeat_ms > 0 ? o->env.min_repeat_ms : 10.0, m.cpu, cmd ? cmd : "?");
        rlt_free(cmd);
    }
    rlt_str_printf(out, "states %d\n", n_done);
    for (int i = 0; i < n_done && st == RLT_STATUS_OK; i++) {
        const env_state *e = &evals[i];
        rlt_str_printf(out, "%s\t%.6g\t", rlt_status_str(e->eval_status), e->gflops);
        at = out->len;
        st = kernel_line(&w->nests[i], out, diag);
        if (out->len == at) rlt_str_append(out, "-");
        if (e->eval_status != RLT_STATUS_OK && e->eval_message[0]) {
            rlt_str_append(out, "\t");
            append_message(out, e->eval_message);
        }
        rlt_str_append(out, "\n");
    }
    if (st == RLT_STATUS_OK && out->has_failed)
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory writing the state dataset");
    return st;
}

rlt_status rlt_env_dataset_make(const char *op_spec, const char *path, const rlt_env_dataset_opts *opts,
                                rlt_env_dataset_result *out, rlt_diag *diag)
{
    uint64_t t0 = rlt_time_ns();
    rlt_env_dataset_opts o = opts ? *opts : (rlt_env_dataset_opts){0};
    rlt_env_dataset_result res = {0};
    rlt_env *env = NULL;
    walk w = {0};
    env_state *evals = NULL;
    rlt_str text;
    rlt_str_init(&text);
    if (out) *out = res;
    rlt_status st = check_opts(&o, diag);
    if (st != RLT_STATUS_OK) return st;
    if (!path || !path[0]) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "no dataset file named");
    if (!o.depth) o.depth = RLT_ENV_DATASET_DEFAULT_DEPTH;
    if (!o.max_states) o.max_states = RLT_ENV_DATASET_DEFAULT_MAX_STATES;
    if (!o.batch_size) o.batch_size = RLT_ENV_DATASET_DEFAULT_BATCH;

    /* the start: the env checks the schedule, settles the peak and
     * evaluates the start state */
    if ((st = rlt_env_create(op_spec, &o.env, &env, diag)) != RLT_STATUS_OK) goto cleanup;
    st = o.start_schedule ? rlt_env_reset_schedule(env, o.start_schedule, diag) : rlt_env_reset(env, diag);
    if (st != RLT_STATUS_OK) {
        if (o.start_schedule) rlt_diag_prefix(diag, "the start schedule");
        goto cleanup;
    }
    walk_result wr;
    if ((st = walk_states(&w, rlt_env_nest(env), o.depth, o.max_states, o.seed, &wr, diag)) != RLT_STATUS_OK)
        goto cleanup;
    res.n_found = wr.n_found;
    if (!(evals = rlt_malloc((size_t)w.n_nests * sizeof *evals))) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory evaluating %d states", w.n_nests);
        goto cleanup;
    }
    int n_done = 0;
    while (n_done < w.n_nests) {
        int n = w.n_nests - n_done < o.batch_size ? w.n_nests - n_done : o.batch_size;
        for (int k = 0; k < n; k++) {
            memset(&evals[n_done + k], 0, sizeof evals[n_done + k]);
            evals[n_done + k].nest = w.nests[n_done + k];
        }
        if ((st = env_states_evaluate(env, &evals[n_done], n, diag)) != RLT_STATUS_OK) {
            rlt_diag_prefix(diag, "evaluating states %d to %d of %d", n_done + 1, n_done + n, w.n_nests);
            goto cleanup;
        }
        n_done += n;
        if (o.progress) o.progress(o.progress_ctx, n_done, w.n_nests);
        if (o.stop && *o.stop && n_done < w.n_nests) {
            res.was_stopped = true;
            break;
        }
    }
    /* the depth every state of which is in: stopped early, fewer levels */
    res.depth_complete = wr.depth_complete;
    while (res.depth_complete > 0) {
        bool is_all_in = true;
        for (int i = n_done; i < w.n_nests && is_all_in; i++) is_all_in = w.level_of[i] > res.depth_complete;
        if (is_all_in) break;
        res.depth_complete--;
    }
    if ((st = dataset_text(env, &o, &w, evals, n_done, res.depth_complete, &text, diag)) != RLT_STATUS_OK)
        goto cleanup;
    if ((st = rlt_file_write(path, text.data, text.len, diag)) != RLT_STATUS_OK) {
        rlt_diag_prefix(diag, "cannot write the state dataset");
        goto cleanup;
    }
    res.n_states = n_done;
    res.peak_gflops = rlt_env_peak_gflops(env);
    res.start_gflops = evals[0].gflops;
    for (int i = 0; i < n_done; i++) {
        res.n_failed += evals[i].eval_status != RLT_STATUS_OK;
        if (evals[i].gflops > res.best_gflops) res.best_gflops = evals[i].gflops;
    }
    res.wall_s = (double)(rlt_time_ns() - t0) * 1e-9;
    if (out) *out = res;

cleanup:
    rlt_str_free(&text);
    rlt_free(evals);
    walk_free(&w);
    rlt_env_destroy(env);
    return st;
}
