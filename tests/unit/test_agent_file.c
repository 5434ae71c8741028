/* Tests of src/nn/agent_file.c and the learning tuners' agents
 * (src/search/tuner_agent.c): the container round-trips its sections and
 * refuses damaged files (its fuzz corpus, tests/fuzz/corpus/agent/,
 * replays here); every learning tuner saves an agent that, loaded, saves
 * back byte for byte and acts identically (greedy moves, proposals from one
 * seed); a loaded agent starts where the saved one was (better first
 * proposals than a fresh one); and an agent is refused by another tuner,
 * another kind of space, other choices where they matter, or other network
 * sizes. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/agent_file.h"
#include "search/dqn.h"

#include "../common/fixtures.h"
#include "../common/leaks.h"
#include "../common/tmp.h"
#include "../common/tuners.h"

#define AGENT_CORPUS RLTUNE_SOURCE_DIR "/tests/fuzz/corpus/agent"

static char *dir;

static void setup(void) { dir = tmp_dir_make("/tmp/rlt_agent_XXXXXX"); }

static void teardown(void)
{
    tmp_remove_tree(dir);
    free(dir);
}

TestSuite(agent_file, .init = setup, .fini = teardown);

/* The tuners that have an agent. */
static int learning_tuners(const rlt_space *s, const char **out, int max)
{
    int n = 0;
    for (const char *const *name = rlt_tuner_names(); *name; name++) {
        rlt_tuner *t = tuner_make(*name, s, &(rlt_tuner_opts){.seed = 1});
        if (rlt_tuner_has_agent(t) && n < max) out[n++] = *name;
        rlt_tuner_destroy(t);
    }
    return n;
}

Test(agent_file, sections_round_trip)
{
    rlt_op *op = fixture_op("matmul:M=64,N=64,K=64");
    rlt_space s;
    tuner_space(op, &s);
    rlt_diag d = {0};
    rlt_agent_file *f = NULL;
    cr_assert_eq(rlt_tuner_agent_create("dqn", &s, &f, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_mlp_spec spec = {.n_inputs = 3, .n_layers = 2, .layers = {{5, RLT_NN_ACT_TANH}, {2, RLT_NN_ACT_NONE}}};
    rlt_mlp *m = NULL;
    rlt_adam *adam = NULL;
    cr_assert_eq(rlt_mlp_create(&spec, 7, &m, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_adam_create(&(rlt_adam_opts){.lr = 0.01}, m, &adam, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_agent_file_put_mlp(f, "net", m, adam, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_agent_file_put_real(f, "pi", 3.25, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_agent_file_put_bytes(f, "raw", "a\0b", 3, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_agent_file_put_real(f, "pi", 1, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "twice"), "%s", d.message);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_agent_file_put_real(f, "has space", 1, &d), RLT_STATUS_INVALID_ARGUMENT);
    d = (rlt_diag){0};
    const char *path = tmp_path_in(dir, "a.rla");
    cr_assert_eq(rlt_agent_file_save(f, path, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_agent_file_destroy(f);

    cr_assert_eq(rlt_agent_file_load(path, &f, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_str_eq(rlt_agent_file_tuner(f), "dqn");
    cr_assert_eq(rlt_tuner_agent_check_knobs(f, &s, true, &d), RLT_STATUS_OK, "%s", d.message);
    double v = 0;
    cr_assert_eq(rlt_agent_file_get_real(f, "pi", &v, &d), RLT_STATUS_OK);
    cr_assert_eq(v, 3.25);
    const char *raw = NULL;
    size_t len = 0;
    cr_assert_eq(rlt_agent_file_get_bytes(f, "raw", &raw, &len, &d), RLT_STATUS_OK);
    cr_assert(len == 3 && memcmp(raw, "a\0b", 3) == 0);
    rlt_mlp *m2 = NULL;
    rlt_adam *adam2 = NULL;
    cr_assert_eq(rlt_agent_file_get_mlp(f, "net", &spec, &m2, &adam2, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_not_null(adam2);
    cr_assert_eq(memcmp(rlt_mlp_params(m), rlt_mlp_params(m2), rlt_mlp_n_params(m) * sizeof(float)), 0);
    /* the wrong kind or shape of section */
    cr_assert_eq(rlt_agent_file_get_real(f, "raw", &v, &d), RLT_STATUS_INVALID_ARGUMENT);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_agent_file_get_real(f, "missing", &v, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "no section 'missing'"), "%s", d.message);
    rlt_mlp *m3 = NULL;
    rlt_mlp_spec other = spec;
    other.layers[0].n_units = 6;
    d = (rlt_diag){0};
    cr_assert_eq(rlt_agent_file_get_mlp(f, "net", &other, &m3, NULL, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "network net"), "%s", d.message);
    cr_assert_null(m3);
    cr_assert_eq(rlt_agent_file_get_mlp(f, "pi", NULL, &m3, NULL, &d), RLT_STATUS_PARSE_ERROR);
    rlt_agent_file_destroy(f);
    rlt_mlp_destroy(m);
    rlt_mlp_destroy(m2);
    rlt_adam_destroy(adam);
    rlt_adam_destroy(adam2);
    rlt_op_destroy(op);
    assert_no_leaks();
}

/* Saves a fresh dqn agent and returns the file's bytes (free them). */
static char *saved_bytes(const char *path, size_t *out_len)
{
    rlt_op *op = fixture_op("matmul:M=64,N=64,K=64");
    rlt_space s;
    tuner_space(op, &s);
    rlt_tuner *t = tuner_make("dqn", &s, &(rlt_tuner_opts){.seed = 3, .dqn_hidden = 8});
    rlt_diag d = {0};
    cr_assert_eq(rlt_tuner_save(t, path, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_tuner_destroy(t);
    rlt_op_destroy(op);
    return tmp_file_read(path, out_len);
}

static void expect_refused(const char *bytes, size_t len, const char *what)
{
    rlt_diag d = {0};
    rlt_agent_file *f = NULL;
    cr_assert_eq(rlt_agent_file_load_bytes(bytes, len, "x.rla", &f, &d), RLT_STATUS_PARSE_ERROR, "%s", what);
    cr_assert_null(f);
    cr_assert(strstr(d.message, "x.rla"), "%s: %s", what, d.message);
}

Test(agent_file, damaged_files_are_refused_naming_the_file)
{
    size_t len = 0;
    char *bytes = saved_bytes(tmp_path_in(dir, "good.rla"), &len);
    rlt_diag d = {0};
    rlt_agent_file *f = NULL;
    cr_assert_eq(rlt_agent_file_load_bytes(bytes, len, "x.rla", &f, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_agent_file_destroy(f);
    expect_refused(bytes, 0, "empty");
    expect_refused("RLTUNENN", 8, "a weights file");
    for (size_t cut = 1; cut < len; cut += len / 13 + 1) expect_refused(bytes, len - cut, "truncated");
    char *copy = malloc(len + 1);
    for (size_t at = 8; at < len; at += len / 17 + 1) {
        memcpy(copy, bytes, len);
        copy[at] ^= 0x40;
        expect_refused(copy, len, "one bit flipped");
    }
    memcpy(copy, bytes, len);
    copy[len] = 0;
    expect_refused(copy, len + 1, "a byte after the checksum");
    free(copy);
    free(bytes);
    cr_assert_eq(rlt_agent_file_load(tmp_path_in(dir, "none.rla"), &f, &d), RLT_STATUS_IO_ERROR);
    cr_assert(strstr(d.message, "none.rla"), "%s", d.message);
    assert_no_leaks();
}

/* Files named valid_* load and save back byte for byte; the others are
 * refused with PARSE_ERROR and a message. */
Test(agent_file, fuzz_corpus_replays)
{
    DIR *dp = opendir(AGENT_CORPUS);
    cr_assert_not_null(dp, "cannot open %s", AGENT_CORPUS);
    int n_files = 0, n_valid = 0;
    struct dirent *e;
    while ((e = readdir(dp))) {
        if (e->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", AGENT_CORPUS, e->d_name);
        size_t len = 0;
        char *bytes = tmp_file_read(path, &len);
        rlt_diag d = {0};
        rlt_agent_file *f = NULL;
        rlt_status st = rlt_agent_file_load_bytes(bytes, len, e->d_name, &f, &d);
        bool is_valid = strncmp(e->d_name, "valid_", 6) == 0;
        if (is_valid) {
            cr_assert_eq(st, RLT_STATUS_OK, "%s: %s", e->d_name, d.message);
            const char *out = tmp_path_in(dir, "resaved.rla");
            cr_assert_eq(rlt_agent_file_save(f, out, &d), RLT_STATUS_OK, "%s", d.message);
            size_t len2 = 0;
            char *again = tmp_file_read(out, &len2);
            cr_assert(len2 == len && memcmp(again, bytes, len) == 0, "%s does not save back as read", e->d_name);
            free(again);
            n_valid++;
        } else {
            cr_assert_eq(st, RLT_STATUS_PARSE_ERROR, "%s: %s", e->d_name, rlt_status_str(st));
            cr_assert_null(f);
            cr_assert_neq(d.message[0], '\0', "%s", e->d_name);
        }
        rlt_agent_file_destroy(f);
        free(bytes);
        n_files++;
    }
    closedir(dp);
    cr_assert_geq(n_files, 12, "the agent corpus has only %d files", n_files);
    cr_assert_geq(n_valid, 2, "only %d valid files", n_valid);
    assert_no_leaks();
}

/* Proposals of t over `trials` synthetic trials, in order (room for them). */
static int proposals(rlt_tuner *t, const rlt_space *s, const rlt_config *best, int trials, rlt_config *out)
{
    return tuner_drive(t, s, fixture_synthetic_score, best, trials, out, NULL, NULL);
}

/* A tuner `name` of `seed` driven for `trials` synthetic trials, its
 * agent saved to `path`. Destroy it with rlt_tuner_destroy. */
static rlt_tuner *trained_and_saved(const char *name, uint64_t seed, const rlt_space *s, const rlt_config *best,
                                    int trials, const char *path)
{
    rlt_tuner *t = tuner_make(name, s, &(rlt_tuner_opts){.seed = seed});
    proposals(t, s, best, trials, NULL);
    rlt_diag d = {0};
    cr_assert_eq(rlt_tuner_save(t, path, &d), RLT_STATUS_OK, "%s: %s", name, d.message);
    return t;
}

Test(agent_file, every_learning_tuner_saves_and_loads_exactly)
{
    rlt_op *op;
    rlt_space s;
    rlt_config best;
    tuner_synthetic_space(&op, &s, &best);
    const char *names[16];
    int n_names = learning_tuners(&s, names, 16);
    cr_assert_geq(n_names, 3, "only %d learning tuners", n_names);
    for (int i = 0; i < n_names; i++) {
        rlt_diag d = {0};
        const char *first = tmp_path_in(dir, "first.rla"), *second = tmp_path_in(dir, "second.rla");
        rlt_tuner *a = trained_and_saved(names[i], 5, &s, &best, 320, first); /* ga-dqn learns after 100 children */

        /* loaded, it saves back the same bytes: everything saved is restored */
        rlt_tuner *b = tuner_make(names[i], &s, &(rlt_tuner_opts){.seed = 9});
        cr_assert_eq(rlt_tuner_load(b, first, &d), RLT_STATUS_OK, "%s: %s", names[i], d.message);
        cr_assert_eq(rlt_tuner_save(b, second, &d), RLT_STATUS_OK, "%s", d.message);
        size_t len1 = 0, len2 = 0;
        char *bytes1 = tmp_file_read(first, &len1), *bytes2 = tmp_file_read(second, &len2);
        cr_assert(len1 == len2 && memcmp(bytes1, bytes2, len1) == 0, "%s: the reloaded agent saves differently",
                  names[i]);
        free(bytes1);
        free(bytes2);

        /* two tuners of one seed loading one agent act alike; a fresh one of
         * that seed acts otherwise, so something was loaded */
        rlt_tuner *c = tuner_make(names[i], &s, &(rlt_tuner_opts){.seed = 9});
        cr_assert_eq(rlt_tuner_load(c, first, &d), RLT_STATUS_OK, "%s", d.message);
        rlt_tuner *fresh = tuner_make(names[i], &s, &(rlt_tuner_opts){.seed = 9});
        rlt_config pb[96], pc[96], pf[96];
        int nb = proposals(b, &s, &best, 96, pb), nc = proposals(c, &s, &best, 96, pc);
        int nf = proposals(fresh, &s, &best, 96, pf);
        cr_assert(nb == 96 && nc == 96 && nf == 96);
        cr_assert_eq(memcmp(pb, pc, sizeof pb), 0, "%s: two loads of one agent act differently", names[i]);
        cr_assert_neq(memcmp(pb, pf, sizeof pb), 0, "%s: a loaded agent acts as a fresh one", names[i]);
        rlt_tuner_destroy(a);
        rlt_tuner_destroy(b);
        rlt_tuner_destroy(c);
        rlt_tuner_destroy(fresh);
    }
    rlt_op_destroy(op);
    assert_no_leaks();
}

Test(agent_file, a_loaded_dqn_makes_the_saved_greedy_moves)
{
    rlt_op *op;
    rlt_space s;
    rlt_config best;
    tuner_synthetic_space(&op, &s, &best);
    rlt_diag d = {0};
    const char *path = tmp_path_in(dir, "dqn.rla");
    rlt_tuner *a = trained_and_saved("dqn", 2, &s, &best, 320, path);
    rlt_tuner *b = tuner_make("dqn", &s, &(rlt_tuner_opts){.seed = 77});
    cr_assert_eq(rlt_tuner_load(b, path, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_rng rng;
    rlt_rng_seed(&rng, 4);
    for (int probe = 0; probe < 50; probe++) {
        rlt_config c;
        for (int k = 0; k < s.n_knobs; k++) c.choice[k] = (int)rlt_rng_below(&rng, (uint64_t)s.knobs[k].n_choices);
        int moves_a[RLT_SPACE_MAX_KNOBS], moves_b[RLT_SPACE_MAX_KNOBS];
        int step = probe % 20;
        cr_assert_eq(rlt_tuner_dqn_greedy(a, &c, step, moves_a, &d), RLT_STATUS_OK, "%s", d.message);
        cr_assert_eq(rlt_tuner_dqn_greedy(b, &c, step, moves_b, &d), RLT_STATUS_OK, "%s", d.message);
        cr_assert_eq(memcmp(moves_a, moves_b, sizeof(int) * (size_t)s.n_knobs), 0, "probe %d", probe);
    }
    rlt_tuner_destroy(a);
    rlt_tuner_destroy(b);
    rlt_op_destroy(op);
    assert_no_leaks();
}

/* Mean synthetic score of the first 64 proposals of a bandit of `seed`,
 * fresh or loaded from `path`. */
static double first_proposals_mean(const rlt_space *s, const rlt_config *best, uint64_t seed, const char *path)
{
    rlt_tuner *t = tuner_make("bandit", s, &(rlt_tuner_opts){.seed = seed});
    rlt_diag d = {0};
    if (path) cr_assert_eq(rlt_tuner_load(t, path, &d), RLT_STATUS_OK, "%s", d.message);
    double scores[64];
    int n = tuner_drive(t, s, fixture_synthetic_score, best, 64, NULL, scores, NULL);
    cr_assert_eq(n, 64);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += scores[i];
    rlt_tuner_destroy(t);
    return sum / n;
}

/* ktune's point: an agent trained before starts the next run ahead. */
Test(agent_file, a_loaded_bandit_starts_where_it_left_off)
{
    rlt_op *op;
    rlt_space s;
    rlt_config best;
    tuner_synthetic_space(&op, &s, &best);
    const char *path = tmp_path_in(dir, "bandit.rla");
    rlt_tuner_destroy(trained_and_saved("bandit", 1, &s, &best, 640, path));
    double fresh = 0, loaded = 0;
    for (uint64_t seed = 10; seed < 13; seed++) {
        fresh += first_proposals_mean(&s, &best, seed, NULL) / 3;
        loaded += first_proposals_mean(&s, &best, seed, path) / 3;
    }
    cr_log_info("mean score of the first 64 proposals: fresh %.1f, loaded %.1f", fresh, loaded);
    cr_assert_gt(loaded, 3 * fresh + 5, "loaded %.1f vs fresh %.1f", loaded, fresh);
    rlt_op_destroy(op);
    assert_no_leaks();
}

Test(agent_file, agents_that_do_not_fit_are_refused_with_the_reason)
{
    rlt_op *mm = fixture_op("matmul:M=512,N=512,K=512");
    rlt_op *mm_small = fixture_op("matmul:M=64,N=96,K=48");
    rlt_op *conv = fixture_op("conv2d:N=1,C=16,H=14,W=14,K=16,R=3,S=3");
    rlt_space s, s_small, s_conv;
    tuner_space(mm, &s);
    tuner_space(mm_small, &s_small);
    tuner_space(conv, &s_conv);
    rlt_diag d = {0};
    const char *dqn_path = tmp_path_in(dir, "dqn.rla"), *bandit_path = tmp_path_in(dir, "bandit.rla");
    rlt_tuner *t = tuner_make("dqn", &s, &(rlt_tuner_opts){.seed = 1});
    cr_assert_eq(rlt_tuner_save(t, dqn_path, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_tuner_destroy(t);
    t = tuner_make("bandit", &s, &(rlt_tuner_opts){.seed = 1});
    cr_assert_eq(rlt_tuner_save(t, bandit_path, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_tuner_destroy(t);

    struct {
        const char *tuner;
        const rlt_space *space;
        rlt_tuner_opts opts;
        const char *path;
        rlt_status status;
        const char *message;
    } cases[] = {
        {"dqn", &s_small, {.seed = 1}, dqn_path, RLT_STATUS_OK, NULL}, /* other split factors: fine */
        {"bandit", &s, {.seed = 1}, dqn_path, RLT_STATUS_INVALID_ARGUMENT, "holds a dqn agent, not a bandit"},
        {"dqn", &s_conv, {.seed = 1}, dqn_path, RLT_STATUS_INVALID_ARGUMENT, "knob"},
        {"bandit", &s_small, {.seed = 1}, bandit_path, RLT_STATUS_INVALID_ARGUMENT, "choices"},
        {"dqn", &s, {.seed = 1, .dqn_hidden = 32}, dqn_path, RLT_STATUS_INVALID_ARGUMENT, "network q"},
        {"random", &s, {.seed = 1}, dqn_path, RLT_STATUS_INVALID_ARGUMENT, "no agent"},
    };
    for (size_t i = 0; i < RLT_ARRAY_LEN(cases); i++) {
        t = tuner_make(cases[i].tuner, cases[i].space, &cases[i].opts);
        d = (rlt_diag){0};
        rlt_status st = rlt_tuner_load(t, cases[i].path, &d);
        cr_assert_eq(st, cases[i].status, "case %zu: %s: %s", i, rlt_status_str(st), d.message);
        if (cases[i].message) cr_assert(strstr(d.message, cases[i].message), "case %zu: %s", i, d.message);
        /* a refused load leaves a working tuner */
        rlt_config c[4];
        cr_assert_gt(rlt_tuner_next_batch(t, 4, c), 0, "case %zu", i);
        rlt_tuner_destroy(t);
    }
    t = tuner_make("ga", &s, &(rlt_tuner_opts){.seed = 1});
    d = (rlt_diag){0};
    cr_assert_eq(rlt_tuner_save(t, tmp_path_in(dir, "ga.rla"), &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "no agent to save"), "%s", d.message);
    rlt_tuner_destroy(t);
    rlt_op_destroy(mm);
    rlt_op_destroy(mm_small);
    rlt_op_destroy(conv);
    assert_no_leaks();
}
