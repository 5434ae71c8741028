/* Unit tests of the public API (include/rltune.h and the rltune/ headers) through
 * the public headers alone: versions; ops and their accessors; schedules
 * from typed steps, refused when malformed, their text read back; nests,
 * legal and not; measuring nest handles; records' JSON and target text;
 * a tuning session opened from options (each option it refuses named by
 * rlt_session_open), stepped to its end, summarised, as JSON, with its
 * last error. Nothing here includes a src/ header. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rltune.h>

#include "../common/tmp.h"

/* The test's own directory (tmp.h), made when a test first needs it. */
static char temp_dir[] = "/tmp/rlt_api_XXXXXX";

TestSuite(api, .fini = tmp_dir_remove_used, .timeout = 300);

/* A path in the test's own directory, in tmp_path_in's buffers. */
static const char *temp_path(const char *name) { return tmp_path_in(tmp_dir_use(temp_dir), name); }

static rlt_op *op_of(const char *spec)
{
    rlt_op *op = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_op_parse(spec, &op, &d), RLT_STATUS_OK, "%s: %s", spec, d.message);
    return op;
}

Test(api, the_version_of_the_headers_is_the_librarys)
{
    cr_assert_str_eq(rlt_version(), RLTUNE_VERSION);
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", RLTUNE_VERSION_MAJOR, RLTUNE_VERSION_MINOR, RLTUNE_VERSION_PATCH);
    cr_assert_str_eq(want, RLTUNE_VERSION);
}

Test(api, ops_answer_their_spec_kind_flops_and_text)
{
    rlt_op *op = op_of("matmul:M=4,N=8,K=2");
    cr_assert_str_eq(rlt_op_spec(op), "matmul:M=4,N=8,K=2");
    cr_assert_str_eq(rlt_op_kind(op), "matmul");
    cr_assert_eq(rlt_op_flops(op), 2.0 * 4 * 8 * 2);
    char *text = rlt_op_text(op);
    cr_assert(strstr(text, "C[i,j] += A[i,k] * B[k,j]"), "%s", text);
    rlt_free(text);
    rlt_op_destroy(op);
    rlt_op *e = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_op_from_expr("Y[i] = X[i] * 2", "i=8", &e, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_str_eq(rlt_op_kind(e), "expr");
    rlt_op *again = op_of(rlt_op_spec(e));
    cr_assert_str_eq(rlt_op_spec(again), rlt_op_spec(e), "an expression's spec parses back");
    rlt_op_destroy(again);
    rlt_op_destroy(e);
    int n = 0;
    const rlt_op_info *lib = rlt_op_library(&n);
    cr_assert_gt(n, 3);
    for (int i = 0; i < n; i++) {
        rlt_op *x = op_of(lib[i].example);
        cr_assert_str_eq(rlt_op_kind(x), lib[i].name);
        rlt_op_destroy(x);
    }
}

Test(api, typed_steps_make_the_schedule_the_text_says)
{
    rlt_sched *s = rlt_sched_create();
    rlt_diag d = {0};
    const char *const order[] = {"i", "j.o", "k", "j.i"};
    cr_assert_eq(rlt_sched_add_split(s, "j", 8, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_sched_add_reorder(s, 4, order, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_sched_add_cache_write(s, "k", &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_sched_add_unroll(s, "k", &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_sched_add_vectorize(s, "j.i", &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_sched_add_parallel(s, "i", 2, &d), RLT_STATUS_OK);
    const int dims[] = {1};
    const int64_t blocks[] = {8};
    cr_assert_eq(rlt_sched_add_pack(s, "B", 1, dims, blocks, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_sched_add_pad(s, "A", &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_sched_n_steps(s), 8);
    char *text = rlt_sched_text(s);
    cr_assert_str_eq(text, "# rltune schedule v1\nsplit j 8\nreorder i j.o k j.i\ncache_write k\nunroll k\n"
                           "vectorize j.i\nparallel i 2\npack B 1 8\npad A\n");
    /* read back, the same text */
    rlt_sched *back = NULL;
    cr_assert_eq(rlt_sched_parse(text, "test", &back, &d), RLT_STATUS_OK, "%s", d.message);
    char *again = rlt_sched_text(back);
    cr_assert_str_eq(again, text);
    rlt_free(again);
    rlt_free(text);
    rlt_sched_destroy(back);
    /* malformed steps are refused and leave the schedule as it was */
    struct {
        rlt_status st;
        const char *needle;
    } refused[6];
    const char *const one[] = {"i"};
    refused[0].st = rlt_sched_add_split(s, "j", 0, &d);
    refused[0].needle = "factor 0 is out of range";
    refused[1].st = rlt_sched_add_split(s, "", 4, &d);
    refused[1].needle = "the loop is empty";
    refused[2].st = rlt_sched_add_unroll(s, "has space", &d);
    refused[2].needle = "holds character 0x20";
    refused[3].st = rlt_sched_add_reorder(s, 1, one, &d);
    refused[3].needle = "reorder: 1 loops";
    refused[4].st = rlt_sched_add_parallel(s, "i", 1000, &d);
    refused[4].needle = "thread count 1000";
    char long_name[300];
    memset(long_name, 'x', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    refused[5].st = rlt_sched_add_vectorize(s, long_name, &d);
    refused[5].needle = "longer than";
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        cr_assert_eq(refused[i].st, RLT_STATUS_INVALID_ARGUMENT, "case %zu", i);
    rlt_diag e = {0}, f = {0};
    rlt_sched_add_split(s, "j", 0, &e);
    cr_assert(strstr(e.message, refused[0].needle), "%s", e.message);
    rlt_sched_add_reorder(s, 1, one, &f);
    cr_assert(strstr(f.message, refused[3].needle), "%s", f.message);
    cr_assert_eq(rlt_sched_n_steps(s), 8);
    rlt_sched_destroy(s);
}

Test(api, nests_check_each_step_and_print_their_tree_lowered_loops_and_c)
{
    rlt_op *op = op_of("matmul:M=16,N=16,K=16");
    rlt_diag d = {0};
    rlt_nest *plain = NULL;
    cr_assert_eq(rlt_nest_create(op, NULL, &plain, &d), RLT_STATUS_OK, "%s", d.message);
    char *tree = rlt_nest_tree(plain);
    cr_assert_str_eq(tree, "for i in 0..16\n  for j in 0..16\n    for k in 0..16  reduce\n      C[i,j] += A[i,k] * B[k,j]\n");
    rlt_free(tree);
    rlt_c_source c;
    cr_assert_eq(rlt_nest_c_source(plain, &c, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(strstr(c.code, "void rlt_k_"), "%s", c.code);
    cr_assert(strstr(c.code, c.symbol), "%s not in %s", c.symbol, c.code);
    cr_assert_not(c.needs_openmp);
    cr_assert_not(rlt_nest_is_parallel(plain));
    rlt_free(c.code);
    char *lowered = NULL;
    cr_assert_eq(rlt_nest_lowered_text(plain, &lowered, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_str_eq(lowered, "for i < 16\n  for j < 16\n    plan: zero the output before accumulating\n"
                              "      zero output\n        output C: scalar\n    for k < 16\n"
                              "      compute: A[i,k] * B[k,j]\n        load A[i,k]: scalar\n"
                              "        load B[k,j]: scalar\n        output C: scalar\n");
    rlt_free(lowered);
    rlt_sched *bad = NULL;
    cr_assert_eq(rlt_sched_parse("vectorize k\n", "bad.sched", &bad, &d), RLT_STATUS_OK);
    rlt_nest *n = (rlt_nest *)&n;
    cr_assert_eq(rlt_nest_create(op, bad, &n, &d), RLT_STATUS_ILLEGAL_SCHEDULE);
    cr_assert_null(n);
    cr_assert(strstr(d.message, "vectorize"), "%s", d.message);
    rlt_sched_destroy(bad);
    rlt_nest_destroy(plain);
    rlt_op_destroy(op);
}

Test(api, measuring_nest_handles)
{
    rlt_op *op = op_of("matmul:M=16,N=16,K=16"), *other = op_of("matmul:M=8,N=8,K=8");
    rlt_diag d = {0};
    rlt_sched *s = NULL;
    cr_assert_eq(rlt_sched_parse("split j 8\nreorder i j.o k j.i\nvectorize j.i\n", "t", &s, &d), RLT_STATUS_OK);
    rlt_nest *a = NULL, *b = NULL, *c = NULL;
    cr_assert_eq(rlt_nest_create(op, s, &a, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_nest_create(op, NULL, &b, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_nest_create(other, NULL, &c, &d), RLT_STATUS_OK);
    rlt_build_opts bo = {.cflags = "-O1 -march=native"};
    rlt_run_opts ro = {.repeat = 1, .min_repeat_ms = 0.5};
    rlt_workload *w = NULL;
    cr_assert_eq(rlt_workload_create(op, &bo, 0, &w, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_run_result r[2];
    const rlt_nest *const two[] = {a, b};
    cr_assert_eq(rlt_measure(w, &bo, &ro, 2, two, r, &d), RLT_STATUS_OK, "%s", d.message);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(r[i].status, RLT_STATUS_OK, "%d: %s", i, r[i].message);
        cr_assert_gt(r[i].gflops, 0);
    }
    const rlt_nest *const wrong[] = {c};
    cr_assert_eq(rlt_measure(w, &bo, &ro, 1, wrong, r, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "workload"), "%s", d.message);
    rlt_workload_destroy(w);
    rlt_nest_destroy(a);
    rlt_nest_destroy(b);
    rlt_nest_destroy(c);
    rlt_sched_destroy(s);
    rlt_op_destroy(op);
    rlt_op_destroy(other);
}

Test(api, a_records_json_and_target_text_read_back)
{
    rlt_record r = {.id = 3, .status = RLT_STATUS_RUN_TIMEOUT, .is_final = true, .seed = 77, .created_s = 1.5};
    snprintf(r.spec, sizeof r.spec, "add:N=8");
    snprintf(r.tuner, sizeof r.tuner, "ga");
    snprintf(r.message, sizeof r.message, "ran past 10 s");
    rlt_diag d = {0};
    cr_assert_eq(rlt_record_target_parse("cpu=x;vec=16;threads=2;weights=prepacked;codegen=9;cc=gcc -O2", &r.target,
                                         &d),
                 RLT_STATUS_OK, "%s", d.message);
    char *key = rlt_record_target_text(&r.target);
    cr_assert_str_eq(key, "cpu=x;vec=16;threads=2;weights=prepacked;codegen=9;cc=gcc -O2");
    rlt_free(key);
    char *json = rlt_record_json(&r);
    cJSON *o = cJSON_Parse(json);
    cr_assert_not_null(o, "%s", json);
    cr_assert_str_eq(cJSON_GetObjectItem(o, "status")->valuestring, "RUN_TIMEOUT");
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(o, "final")));
    cr_assert_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "target"), "threads")->valueint, 2);
    cJSON_Delete(o);
    rlt_record back;
    cr_assert_eq(rlt_record_from_json(json, "test", &back, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(rlt_record_target_equal(&back.target, &r.target));
    cr_assert_eq(back.status, r.status);
    cr_assert_eq(back.seed, 77);
    cr_assert_str_eq(back.message, r.message);
    rlt_free(json);
    cr_assert_eq(rlt_record_target_parse("cpu=x;vec=16;cc=gcc", &r.target, &d), RLT_STATUS_PARSE_ERROR);
    cr_assert(strstr(d.message, "'threads' is missing"), "%s", d.message);
}

/* ---- sessions ----------------------------------------------------------- */

static rlt_session_options small_options(const char *db)
{
    rlt_session_options o;
    rlt_session_options_init(&o);
    o.tuner = "random";
    o.n_trials = 10;
    o.batch_size = 4;
    o.seed = 2;
    o.n_seeds = 2;
    o.n_final = 2;
    o.db_path = db;
    o.build.cflags = "-O1 -march=native";
    o.run = (rlt_run_opts){.repeat = 1, .min_repeat_ms = 0.5};
    return o;
}

/* rlt_session_open refuses o naming `which`, with a message holding needle. */
static void expect_refused(const rlt_op *op, const rlt_session_options *o, rlt_session_option which,
                           const char *needle)
{
    rlt_session *s = (rlt_session *)&s;
    rlt_session_option bad = RLT_OPTION_NONE;
    rlt_diag d = {0};
    rlt_status st = rlt_session_open(op, o, &s, &bad, &d);
    cr_assert_neq(st, RLT_STATUS_OK, "refused: %s", needle);
    cr_assert_null(s);
    cr_assert_eq(bad, which, "'%s': option %d refused, not %d (%s)", needle, bad, which, d.message);
    cr_assert(strstr(d.message, needle), "no '%s' in: %s", needle, d.message);
}

Test(api, a_session_names_the_option_it_refuses)
{
    rlt_op *op = op_of("matmul:M=16,N=16,K=16");
    const char *db = temp_path("s.db"), *junk = temp_path("junk.json");
    tmp_file_write_text(junk, "[1, 2]");
    rlt_session_options o = small_options(db);
    o.tuner = "annealing";
    expect_refused(op, &o, RLT_OPTION_TUNER, "unknown tuner 'annealing'");
    o = small_options(db);
    o.batch_size = 1000;
    expect_refused(op, &o, RLT_OPTION_NUMBERS, "batch_size");
    o = small_options(temp_dir);
    expect_refused(op, &o, RLT_OPTION_DB, temp_dir);
    o = small_options(db);
    o.transfer_path = db;
    expect_refused(op, &o, RLT_OPTION_TRANSFER, "needs a tuner with one");
    o = small_options(db);
    o.agent_out = junk;
    expect_refused(op, &o, RLT_OPTION_AGENT, "has no agent");
    o = small_options(db);
    o.start_key = "v1;nonsense=1";
    expect_refused(op, &o, RLT_OPTION_START, "nonsense");
    o = small_options(db);
    o.tuner_config_path = junk;
    expect_refused(op, &o, RLT_OPTION_TUNER_CONFIG, "not a JSON object");
    o = small_options(db);
    o.tuner_options = "ga_dqn_lr=0.1";
    expect_refused(op, &o, RLT_OPTION_TUNER_OPTIONS, "not of random");
    o = small_options(db);
    o.replay_path = junk;
    expect_refused(op, &o, RLT_OPTION_DB, "a replay stores no records");
    o = small_options(NULL);
    o.replay_path = junk;
    expect_refused(op, &o, RLT_OPTION_REPLAY, "junk.json");
    o = small_options(db);
    o.policy_path = junk;
    expect_refused(op, &o, RLT_OPTION_POLICY, "junk.json");
    cr_assert_eq(access(db, F_OK), -1, "a refused session made its database");
    rlt_op_destroy(op);
}

/* A session of o opened, stepped to its end and finished. */
static rlt_session *session_run(const rlt_op *op, const rlt_session_options *o)
{
    rlt_session *s = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_session_open(op, o, &s, NULL, &d), RLT_STATUS_OK, "%s", d.message);
    while (!rlt_session_is_done(s)) cr_assert_eq(rlt_session_step(s, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_session_finish(s, &d), RLT_STATUS_OK, "%s", d.message);
    return s;
}

Test(api, a_session_steps_to_its_end_and_says_where_it_stands)
{
    rlt_op *op = op_of("matmul:M=16,N=16,K=16");
    const char *db = temp_path("steps.db");
    rlt_session_options o = small_options(db);
    rlt_session *s = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_session_open(op, &o, &s, NULL, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_str_eq(rlt_session_last_error(s), "");
    rlt_session_summary sum;
    int n_steps = 0;
    while (!rlt_session_is_done(s)) {
        cr_assert_eq(rlt_session_step(s, &d), RLT_STATUS_OK, "%s", d.message);
        rlt_session_summary_get(s, &sum);
        n_steps++;
        cr_assert_eq(sum.n_trials, 2 + 4 * (n_steps - 1), "step %d: the seeds alone first, then batches of 4",
                     n_steps);
        cr_assert_eq(sum.n_total, 10);
        cr_assert_eq(sum.curve[sum.n_trials - 1], sum.best_gflops);
    }
    cr_assert_eq(n_steps, 3);
    cr_assert_eq(rlt_session_finish(s, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_session_summary_get(s, &sum);
    cr_assert_eq(sum.n_measured, 10);
    cr_assert_eq(sum.n_seeds, 2);
    cr_assert_eq(sum.n_final, 2);
    cr_assert_gt(sum.best_gflops, 0);
    cr_assert(strstr(sum.best_schedule, "# rltune schedule v1"), "%s", sum.best_schedule);
    char *json = rlt_session_json(s);
    cJSON *j = cJSON_Parse(json);
    cr_assert_not_null(j, "%s", json);
    cr_assert_eq(cJSON_GetObjectItem(j, "trials")->valueint, 10);
    cr_assert_str_eq(cJSON_GetObjectItem(j, "tuner")->valuestring, "random");
    cr_assert_str_eq(cJSON_GetObjectItem(j, "db")->valuestring, db);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "curve")), 10);
    cJSON_Delete(j);
    rlt_free(json);
    /* a call after the end fails, and the handle keeps its message */
    cr_assert_eq(rlt_session_step(s, NULL), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(rlt_session_last_error(s), "has ended"), "%s", rlt_session_last_error(s));
    rlt_session_destroy(s);
    /* the records are there: 10 trials, 2 final picks */
    rlt_db *rdb = NULL;
    cr_assert_eq(rlt_db_open(db, &(rlt_db_opts){.is_read_only = true}, &rdb, &d), RLT_STATUS_OK, "%s", d.message);
    int64_t n = 0;
    cr_assert_eq(rlt_db_count(rdb, rlt_op_spec(op), &n, &d), RLT_STATUS_OK);
    cr_assert_eq(n, 12);
    rlt_db_close(rdb);
    rlt_op_destroy(op);
}

/* An executor that measures here through the public halves of rlt_measure
 * (rlt_measure_build, rlt_measure_run), as a remote machine would: from
 * each candidate's schedule text, compiled by the candidate's compiler. */
typedef struct counting_executor {
    rlt_workload *w;
    const rlt_op *op;
    char target[1024];
    int n_calls, n_candidates;
} counting_executor;

static rlt_status counted_measure(void *ctx, const rlt_op *op, const char *target, const rlt_build_opts *build,
                                  const rlt_run_opts *run, int n, const rlt_candidate *cands, rlt_run_result *out,
                                  rlt_diag *diag)
{
    counting_executor *x = ctx;
    cr_assert_eq(op, x->op, "the session's own op");
    cr_assert_str_eq(target, x->target);
    cr_assert_eq(run->n_threads, 1);
    x->n_calls++;
    x->n_candidates += n;
    rlt_nest *nests[64];
    const char *cc_of[64];
    cr_assert_leq(n, 64);
    for (int i = 0; i < n; i++) {
        rlt_sched *s = NULL;
        cr_assert_eq(rlt_sched_parse(cands[i].schedule, "candidate", &s, diag), RLT_STATUS_OK, "%s", diag->message);
        cr_assert_eq(rlt_nest_create(op, s, &nests[i], diag), RLT_STATUS_OK, "%s", diag->message);
        rlt_sched_destroy(s);
        cc_of[i] = cands[i].cc;
    }
    rlt_batch *b = NULL;
    rlt_status st = rlt_measure_build(x->w, build, n, (const rlt_nest *const *)nests, cc_of, &b, diag);
    if (b) {
        rlt_measure_run(b, run, out);
        rlt_measure_run(b, run, out); /* a batch runs as often as asked */
    }
    rlt_batch_destroy(b);
    for (int i = 0; i < n; i++) rlt_nest_destroy(nests[i]);
    return st;
}

Test(api, an_executor_builds_and_runs_every_batch_of_a_session)
{
    rlt_op *op = op_of("matmul:M=16,N=24,K=8");
    const char *db = temp_path("executor.db");
    rlt_session_options o = small_options(db);
    counting_executor x = {.op = op};
    rlt_diag d = {0};
    rlt_record_target t;
    cr_assert_eq(rlt_session_target(&o.build, 1, &t, &d), RLT_STATUS_OK, "%s", d.message);
    char *key = rlt_record_target_text(&t);
    snprintf(x.target, sizeof x.target, "%s", key);
    rlt_free(key);
    cr_assert_eq(rlt_workload_create(op, &o.build, 0, &x.w, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_executor executor = {.measure = counted_measure, .ctx = &x};
    o.executor = &executor;
    rlt_session *s = session_run(op, &o);
    rlt_session_summary sum;
    rlt_session_summary_get(s, &sum);
    cr_assert_eq(sum.n_measured, 10);
    cr_assert_eq(sum.n_failed, 0);
    cr_assert_gt(sum.best_gflops, 0);
    /* three batches (2 seeds, then 4 and 4), then the final pick's rounds of its 2 */
    cr_assert_eq(x.n_calls, 3 + sum.final_rounds, "%d calls", x.n_calls);
    cr_assert_eq(x.n_candidates, 10 + 2 * sum.final_rounds);
    rlt_session_destroy(s);
    /* and no executor with a replay, which runs nothing */
    o = small_options(NULL);
    o.executor = &executor;
    o.replay_path = temp_path("none.db");
    expect_refused(op, &o, RLT_OPTION_REPLAY, "no executor");
    rlt_workload_destroy(x.w);
    rlt_op_destroy(op);
}

static bool names_a_compiler(const rlt_record *r, void *ctx)
{
    if (strstr(r->config, "cc=")) (*(int *)ctx)++;
    return true;
}

/* no_clang: the space has no cc knob, so every configuration is built by
 * the options' compiler (what a network at several threads runs). With
 * clang installed (install-deps.sh), the keys name a compiler otherwise. */
Test(api, a_session_without_clang_searches_one_compiler)
{
    rlt_op *op = op_of("matmul:M=16,N=16,K=16");
    for (int no_clang = 0; no_clang <= 1; no_clang++) {
        const char *db = temp_path(no_clang ? "no_clang.db" : "clang.db");
        rlt_session_options o = small_options(db);
        o.n_threads = 2;
        o.n_final = 0;
        o.no_clang = no_clang;
        rlt_session_destroy(session_run(op, &o));
        rlt_diag d = {0};
        rlt_db *rdb = NULL;
        int n_named = 0;
        cr_assert_eq(rlt_db_open(db, &(rlt_db_opts){.is_read_only = true}, &rdb, &d), RLT_STATUS_OK, "%s", d.message);
        cr_assert_eq(rlt_db_history(rdb, rlt_op_spec(op), NULL, names_a_compiler, &n_named, &d), RLT_STATUS_OK);
        rlt_db_close(rdb);
        if (no_clang)
            cr_expect_eq(n_named, 0, "no configuration chooses a compiler");
        else if (system("clang --version >/dev/null 2>&1") == 0)
            cr_expect_eq(n_named, 10, "with clang installed every key names its compiler");
    }
    rlt_op_destroy(op);
}

/* A dataset measured through the API, replayed by a session, and its best
 * found in the records under the target the API computes; the best's
 * GFLOP/s goes through JSON text unchanged. */
Test(api, a_dataset_is_measured_then_replayed_under_its_target)
{
    rlt_op *op = op_of("matmul:M=8,N=8,K=8");
    const char *path = temp_path("ds.db");
    rlt_diag d = {0};
    rlt_dataset_opts o = {.n_samples = 12, .seed = 1, .batch_size = 6, .n_threads = 1,
                          .build = {.cflags = "-O1 -march=native"},
                          .run = {.repeat = 1, .min_repeat_ms = 0.5}};
    rlt_dataset_info info;
    rlt_dataset_result r;
    cr_assert_eq(rlt_dataset_measure(op, path, &o, &info, &r, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(r.n_done, info.n_configs);
    cr_assert_eq(r.n_measured, info.n_configs);
    cr_assert_gt(r.best_gflops, 0);
    /* again: nothing left to measure */
    rlt_dataset_result again;
    cr_assert_eq(rlt_dataset_measure(op, path, &o, &info, &again, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(again.n_measured, 0);
    cr_assert_eq(again.n_from_records, info.n_configs);
    cr_assert_str_eq(again.best_config, r.best_config);

    rlt_record_target t;
    cr_assert_eq(rlt_session_target(&o.build, 1, &t, &d), RLT_STATUS_OK, "%s", d.message);
    char *key = rlt_record_target_text(&t);
    cr_assert_str_eq(key, info.target);
    rlt_db *db = NULL;
    cr_assert_eq(rlt_db_open(path, &(rlt_db_opts){.is_read_only = true}, &db, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_record best;
    bool found = false;
    cr_assert_eq(rlt_db_best(db, rlt_op_spec(op), key, &best, &found, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(found);
    cr_assert_eq(best.gflops, r.best_gflops);
    char cc[16];
    cr_assert(rlt_config_key_get(best.config, "cc", cc, sizeof cc), "%s", best.config);
    cr_assert_str_eq(cc, r.best_cc);
    cr_assert_not(rlt_config_key_get(best.config, "colour", cc, sizeof cc));
    rlt_db_close(db);
    rlt_free(key);

    rlt_session_options so;
    rlt_session_options_init(&so);
    so.tuner = "grid";
    so.n_trials = 40;
    so.replay_path = path;
    so.build = o.build;
    rlt_session *s = session_run(op, &so);
    rlt_session_summary sum;
    rlt_session_summary_get(s, &sum);
    cr_assert_eq(sum.n_measured, 0, "a replay measures nothing");
    cr_assert_eq(sum.n_replayed, info.n_configs);
    cr_assert_eq(sum.best_gflops, r.best_gflops);
    char *json = rlt_session_json(s);
    cJSON *j = cJSON_Parse(json);
    cr_assert_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "best"), "gflops")->valuedouble, r.best_gflops,
                 "exact through JSON: %s", json);
    cJSON_Delete(j);
    rlt_free(json);
    rlt_session_destroy(s);
    rlt_op_destroy(op);
}

Test(api, numbers_are_written_exactly)
{
    const double values[] = {0.1, 1.0 / 3.0, 0.9029770279569349, 9.151093921292661, 1e-300, 123456789.125};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        char text[40];
        rlt_format_double(values[i], text, sizeof text);
        cr_assert_eq(strtod(text, NULL), values[i], "%s", text);
        cr_assert_leq(strlen(text), 24u, "%s", text);
    }
    char text[40];
    rlt_format_double(0.1, text, sizeof text);
    cr_assert_str_eq(text, "0.1", "the shortest form");
}

Test(api, the_tuner_tables_list_every_tuner_and_parameter)
{
    int n_tuners = 0;
    for (const char *const *n = rlt_tuner_names(); *n; n++, n_tuners++)
        cr_assert_gt(strlen(rlt_tuner_summary(*n)), 10u, "%s has a summary", *n);
    cr_assert_eq(n_tuners, 9);
    cr_assert_str_eq(rlt_tuner_summary("no-such-tuner"), "");
    cr_assert_gt(rlt_tuner_param_count(), 10);
    for (int i = 0; i < rlt_tuner_param_count(); i++) {
        rlt_tuner_param p = rlt_tuner_param_at(i);
        cr_assert(p.name && p.tuners && p.def && p.help, "parameter %d", i);
        /* the first tuner it names reads it */
        char first[32];
        snprintf(first, sizeof first, "%.*s", (int)strcspn(p.tuners, " "), p.tuners);
        cr_assert(rlt_tuner_reads_param(first, p.name), "%s reads %s", first, p.name);
    }
    cr_assert_null(rlt_tuner_param_at(-1).name);
    cr_assert_null(rlt_tuner_param_at(rlt_tuner_param_count()).name);
    cr_assert_not(rlt_tuner_reads_param("random", "dqn_horizon"));
    rlt_machine m;
    rlt_machine_detect(&m);
    cr_assert_gt(m.n_cores, 0);
    cr_assert_geq(m.vector_floats, 4);
    char *cmd = rlt_build_command(&(rlt_build_opts){.cc = "gcc", .cflags = "-O2"}, true);
    cr_assert(strncmp(cmd, "gcc -O2", 7) == 0 && strstr(cmd, "-fopenmp"), "%s", cmd);
    rlt_free(cmd);
}

/* The long-lived handles keep the message of their last failed call, also
 * when the caller passed no diag. */
Test(api, handles_keep_their_last_error)
{
    rlt_diag d = {0};
    rlt_db *db = NULL;
    cr_assert_eq(rlt_db_open(temp_path("errors.db"), NULL, &db, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_str_eq(rlt_db_last_error(db), "");
    rlt_record bad = {0}; /* no spec, no target: refused whole */
    cr_assert_neq(rlt_db_append(db, 1, &bad, NULL), RLT_STATUS_OK);
    cr_assert_neq(rlt_db_last_error(db)[0], '\0');
    char kept[1024];
    snprintf(kept, sizeof kept, "%s", rlt_db_last_error(db));
    cr_assert_neq(rlt_db_append(db, 1, &bad, &d), RLT_STATUS_OK);
    cr_assert_str_eq(d.message, kept, "the caller's diag gets the same message");
    rlt_db_close(db);

    d = (rlt_diag){0};
    rlt_env *env = NULL;
    rlt_env_opts eo = {.peak_gflops = 1};
    cr_assert_eq(rlt_env_create("matmul:M=8,N=8,K=8", &eo, &env, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_str_eq(rlt_env_last_error(env), "");
    cr_assert_neq(rlt_env_reset_schedule(env, "vectorize nowhere\n", NULL), RLT_STATUS_OK);
    cr_assert(strstr(rlt_env_last_error(env), "nowhere"), "%s", rlt_env_last_error(env));
    rlt_env_destroy(env);

    const char *config = temp_path("exp.json");
    FILE *f = fopen(config, "w");
    cr_assert_not_null(f);
    fputs("{\"name\": \"x\", \"measure\": \"replay\", \"trials\": 4, \"seeds\": 1,\n"
          " \"workloads\": [{\"op\": \"matmul:M=8,N=8,K=8\", \"dataset\": \"missing.db\"}], \"tuners\": [\"random\"]}\n",
          f);
    fclose(f);
    rlt_experiment *e = NULL;
    d = (rlt_diag){0};
    cr_assert_neq(rlt_experiment_open(config, &e, &d), RLT_STATUS_OK);
    cr_assert_null(e);
    cr_assert(strstr(d.message, "missing.db"), "%s", d.message);
}

/* The options' strings are borrowed for rlt_session_open only: freed (and
 * overwritten) right after it, the session still builds, stores and saves. */
Test(api, a_session_keeps_nothing_of_the_callers_strings)
{
    rlt_op *op = op_of("matmul:M=8,N=8,K=8");
    char *db = strdup(temp_path("borrowed.db"));
    char *cc = strdup("gcc"), *cflags = strdup("-O1 -march=native"), *tuner = strdup("ga");
    char *agent_out = strdup(temp_path("agent.bin"));
    rlt_session_options o = small_options(db);
    o.tuner = tuner;
    o.build.cc = cc;
    o.build.cflags = cflags;
    o.agent_out = agent_out;
    o.tuner = "ga-dqn"; /* a tuner with an agent to save at finish */
    rlt_session *s = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_session_open(op, &o, &s, NULL, &d), RLT_STATUS_OK, "%s", d.message);
    char *const mine[] = {db, cc, cflags, tuner, agent_out};
    for (size_t i = 0; i < sizeof mine / sizeof mine[0]; i++) {
        memset(mine[i], 'x', strlen(mine[i]));
        free(mine[i]);
    }
    while (!rlt_session_is_done(s)) cr_assert_eq(rlt_session_step(s, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_session_finish(s, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_session_summary sum;
    rlt_session_summary_get(s, &sum);
    cr_assert_eq(sum.n_failed, 0, "every kernel built with the copied compiler and flags");
    cr_assert_eq(sum.n_measured, 10);
    rlt_session_destroy(s);
    cr_assert_eq(access(temp_path("agent.bin"), F_OK), 0, "the agent was saved where agent_out said");
    cr_assert_eq(access(temp_path("borrowed.db"), F_OK), 0);
    rlt_op_destroy(op);
}

/* The declared bounds hold every observation an episode of random legal
 * actions passes through (the observation space a Gymnasium env declares). */
Test(api, observations_stay_within_their_declared_bounds)
{
    float low[RLT_ENV_OBS_LEN], high[RLT_ENV_OBS_LEN], obs[RLT_ENV_OBS_LEN];
    rlt_env_observation_bounds(low, high);
    for (int i = 0; i < RLT_ENV_OBS_LEN; i++) cr_assert_leq(low[i], high[i], "feature %d", i);
    cr_assert_eq(high[RLT_ENV_OBS_GFLOPS], FLT_MAX);
    rlt_diag d = {0};
    rlt_env *env = NULL;
    rlt_env_opts eo = {.peak_gflops = 1};
    cr_assert_eq(rlt_env_create("conv2d:N=1,C=8,H=6,W=6,K=8,R=3,S=3,pad=1", &eo, &env, &d), RLT_STATUS_OK, "%s",
                 d.message);
    cr_assert_eq(rlt_env_reset(env, &d), RLT_STATUS_OK, "%s", d.message);
    uint64_t rng = 7;
    for (int step = 0; step < 40 && !rlt_env_is_done(env); step++) {
        cr_assert_eq(rlt_env_observe(env, obs, RLT_ENV_OBS_LEN, &d), RLT_STATUS_OK, "%s", d.message);
        for (int i = 0; i < RLT_ENV_OBS_LEN; i++)
            cr_assert(obs[i] >= low[i] && obs[i] <= high[i], "step %d, feature %d = %g", step, i, obs[i]);
        bool mask[RLT_ENV_N_ACTIONS];
        rlt_env_action_mask(env, mask);
        int legal[RLT_ENV_N_ACTIONS], n_legal = 0;
        for (int a = 0; a < RLT_ENV_N_ACTIONS; a++)
            if (mask[a] && a != RLT_ENV_ACTION_STOP) legal[n_legal++] = a;
        if (n_legal == 0) break;
        rng = rng * 6364136223846793005u + 1442695040888963407u;
        double reward = 0;
        bool done = false;
        cr_assert_eq(rlt_env_step(env, legal[(rng >> 33) % (uint64_t)n_legal], &reward, &done, &d), RLT_STATUS_OK,
                     "%s", d.message);
    }
    rlt_env_destroy(env);
}
