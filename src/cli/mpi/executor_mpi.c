/*
 * executor_mpi.c - `--executor mpi`: a tuning run's batches built and timed
 * over the ranks of an MPI job (cli/executor.h; docs/distributed.md).
 *
 * Rank 0 runs the command: the search, the records, the final pick. For
 * each batch it sends every rank (itself included) a share of the
 * candidates, as schedules in text with the op's spec, the records' target
 * key and the build and run options; each rank parses them, lowers and
 * compiles its share. A host times only when every rank on it has finished
 * compiling, and one rank at a time: rank 0 tells each rank of a host in
 * turn to run what it built, and the results come back to rank 0, which
 * stores the batch as a local run does. Hosts time side by side.
 *
 * A rank refuses a batch whose target key (machine, compiler, code
 * version) is not its own: records of two targets are never mixed.
 * Messages are JSON text (cJSON); ranks trust each other, as MPI does, and
 * compile only what they make of a schedule themselves.
 */
#include "cli/cli.h"
#include "cli/executor.h"

#include <cjson/cJSON.h>
#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { TAG_BUILD = 1, TAG_BUILT, TAG_RUN, TAG_RESULTS, TAG_STOP };

#define WORKLOADS_KEPT 32 /* ops a rank keeps the reference of (a network's tasks) */

/* A waiting rank's sleeps between looks (`waiting`, below): a reply that
 * comes at once is read at once, and a long wait (another rank timing)
 * wakes the rank 50 times a second. */
#define WAIT_POLL_MIN_NS (1000 * 1000)
#define WAIT_POLL_MAX_NS (20 * 1000 * 1000)

static int max_int(int a, int b) { return a > b ? a : b; }

/* ---- a rank's side: build a share, then run it when told ------------------ */

typedef struct kept_workload {
    rlt_op *op;
    rlt_workload *w;
} kept_workload;

typedef struct worker {
    kept_workload kept[WORKLOADS_KEPT];
    int n_kept, next_evict;
    /* the share built and waiting for TAG_RUN */
    rlt_batch *batch;
    rlt_run_opts run;
    int n;                    /* candidates of the share */
    int *index;               /* share item -> candidate number in rank 0's batch */
    int *built_of;            /* share item -> nest of the batch, -1: failed before building */
    rlt_run_result *failed;   /* share items that could not be made into nests */
} worker;

static void worker_drop_share(worker *wk)
{
    rlt_batch_destroy(wk->batch);
    free(wk->index);
    free(wk->built_of);
    free(wk->failed);
    wk->batch = NULL;
    wk->index = wk->built_of = NULL;
    wk->failed = NULL;
    wk->n = 0;
}

static void worker_free(worker *wk)
{
    worker_drop_share(wk);
    for (int i = 0; i < wk->n_kept; i++) {
        rlt_workload_destroy(wk->kept[i].w);
        rlt_op_destroy(wk->kept[i].op);
    }
    wk->n_kept = 0;
}

/* The workload of `spec`, kept from an earlier batch or made now. */
static rlt_status worker_workload(worker *wk, const char *spec, const rlt_build_opts *build, kept_workload **out,
                                  rlt_diag *diag)
{
    for (int i = 0; i < wk->n_kept; i++)
        if (strcmp(rlt_op_spec(wk->kept[i].op), spec) == 0) {
            *out = &wk->kept[i];
            return RLT_STATUS_OK;
        }
    kept_workload k = {0};
    rlt_status st = rlt_op_parse(spec, &k.op, diag);
    if (st == RLT_STATUS_OK) st = rlt_workload_create(k.op, build, 0, &k.w, diag);
    if (st != RLT_STATUS_OK) {
        rlt_op_destroy(k.op);
        return st;
    }
    int slot = wk->n_kept < WORKLOADS_KEPT ? wk->n_kept++ : wk->next_evict++ % WORKLOADS_KEPT;
    if (wk->kept[slot].op) {
        rlt_workload_destroy(wk->kept[slot].w);
        rlt_op_destroy(wk->kept[slot].op);
    }
    wk->kept[slot] = k;
    *out = &wk->kept[slot];
    return RLT_STATUS_OK;
}

static const char *json_text(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double json_number(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static bool json_bool(const cJSON *o, const char *name)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, name));
}

/* o when every field went in, else NULL (o freed). */
static cJSON *complete_or_null(cJSON *o, bool is_ok)
{
    if (is_ok) return o;
    cJSON_Delete(o);
    return NULL;
}

/* Whether this rank measures for `target` (rank 0's key), given the build
 * options and threads it was sent. */
static rlt_status check_target(const char *target, const rlt_build_opts *build, int n_threads, rlt_diag *diag)
{
    rlt_record_target theirs, mine;
    rlt_status st = rlt_record_target_parse(target, &theirs, diag);
    if (st == RLT_STATUS_OK) st = rlt_session_target(build, n_threads, &mine, diag);
    if (st != RLT_STATUS_OK) return st;
    mine.is_weights_prepacked = theirs.is_weights_prepacked;
    mine.is_weights_cold = theirs.is_weights_cold;
    if (rlt_record_target_equal(&mine, &theirs)) return RLT_STATUS_OK;
    char *text = rlt_record_target_text(&mine);
    st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                  "measures for target '%.300s', and rank 0 files its records under '%.300s': run the ranks on "
                  "machines of one kind with one rltune build (docs/distributed.md)",
                  text ? text : "?", target);
    rlt_free(text);
    return st;
}

static void build_opts_read(const cJSON *o, rlt_build_opts *b)
{
    *b = (rlt_build_opts){.cc = json_text(o, "cc"),
                          .cflags = json_text(o, "cflags"),
                          .cache_dir = json_text(o, "cache_dir"),
                          .timeout_s = json_number(o, "timeout_s"),
                          .n_parallel = (int)json_number(o, "n_parallel"),
                          .max_per_unit = (int)json_number(o, "max_per_unit")};
}

static void run_opts_read(const cJSON *o, rlt_run_opts *r)
{
    *r = (rlt_run_opts){.number = (int)json_number(o, "number"),
                        .repeat = (int)json_number(o, "repeat"),
                        .min_repeat_ms = json_number(o, "min_repeat_ms"),
                        .warmup = (int)json_number(o, "warmup"),
                        .timeout_s = json_number(o, "timeout_s"),
                        .n_threads = (int)json_number(o, "n_threads"),
                        .no_pin = json_bool(o, "no_pin"),
                        .slow_cutoff_ms = json_number(o, "slow_cutoff_ms"),
                        .cold_weights = json_bool(o, "cold_weights")};
}

/* Lowers and compiles the share a TAG_BUILD message holds; keeps it for
 * TAG_RUN. */
static rlt_status worker_build(worker *wk, const cJSON *msg, rlt_diag *diag)
{
    worker_drop_share(wk);
    const char *spec = json_text(msg, "spec"), *target = json_text(msg, "target");
    const cJSON *cands = cJSON_GetObjectItemCaseSensitive(msg, "candidates");
    if (!spec || !target || !cJSON_IsArray(cands))
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "a batch without its op, target or candidates");
    rlt_build_opts build;
    build_opts_read(cJSON_GetObjectItemCaseSensitive(msg, "build"), &build);
    run_opts_read(cJSON_GetObjectItemCaseSensitive(msg, "run"), &wk->run);
    kept_workload *k = NULL;
    rlt_status st = check_target(target, &build, max_int(wk->run.n_threads, 1), diag);
    if (st == RLT_STATUS_OK) st = worker_workload(wk, spec, &build, &k, diag);
    if (st != RLT_STATUS_OK) return st;
    int n = cJSON_GetArraySize(cands);
    wk->n = n;
    wk->index = calloc((size_t)max_int(n, 1), sizeof *wk->index);
    wk->built_of = calloc((size_t)max_int(n, 1), sizeof *wk->built_of);
    wk->failed = calloc((size_t)max_int(n, 1), sizeof *wk->failed);
    rlt_nest **nests = calloc((size_t)max_int(n, 1), sizeof *nests);
    const char **cc_of = calloc((size_t)max_int(n, 1), sizeof *cc_of);
    if (!wk->index || !wk->built_of || !wk->failed || !nests || !cc_of)
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory building a share of %d candidates", n);
    int n_nests = 0;
    for (int i = 0; st == RLT_STATUS_OK && i < n; i++) {
        const cJSON *c = cJSON_GetArrayItem(cands, i);
        const char *text = json_text(c, "schedule");
        wk->index[i] = (int)json_number(c, "i");
        wk->built_of[i] = -1;
        rlt_diag d = {0};
        rlt_sched *s = NULL;
        rlt_status cst = text ? rlt_sched_parse(text, "rank 0's candidate", &s, &d)
                              : rlt_fail(&d, RLT_STATUS_PARSE_ERROR, "a candidate without its schedule");
        if (cst == RLT_STATUS_OK) cst = rlt_nest_create(k->op, s, &nests[n_nests], &d);
        rlt_sched_destroy(s);
        if (cst != RLT_STATUS_OK) {
            wk->failed[i].status = RLT_STATUS_BUILD_ERROR;
            snprintf(wk->failed[i].message, sizeof wk->failed[i].message, "the schedule does not apply here: %.400s",
                     d.message);
            continue;
        }
        cc_of[n_nests] = json_text(c, "cc");
        wk->built_of[i] = n_nests++;
    }
    if (st == RLT_STATUS_OK)
        st = rlt_measure_build(k->w, &build, n_nests, (const rlt_nest *const *)nests, cc_of, &wk->batch, diag);
    for (int i = 0; nests && i < n_nests; i++) rlt_nest_destroy(nests[i]);
    free(nests);
    free(cc_of);
    if (st != RLT_STATUS_OK) worker_drop_share(wk);
    return st;
}

static cJSON *result_json(int index, const rlt_run_result *r)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    bool is_ok = cJSON_AddNumberToObject(o, "i", index) && cJSON_AddNumberToObject(o, "status", r->status) &&
                 cJSON_AddBoolToObject(o, "is_correct", r->is_correct) &&
                 cJSON_AddNumberToObject(o, "time_min_ms", r->time_min_ms) &&
                 cJSON_AddNumberToObject(o, "time_median_ms", r->time_median_ms) &&
                 cJSON_AddNumberToObject(o, "gflops", r->gflops) &&
                 cJSON_AddNumberToObject(o, "n_samples", r->n_samples) &&
                 cJSON_AddNumberToObject(o, "number", r->number) &&
                 cJSON_AddNumberToObject(o, "max_error", r->max_error) &&
                 cJSON_AddStringToObject(o, "message", r->message) &&
                 cJSON_AddNumberToObject(o, "build_s", r->build_s);
    return complete_or_null(o, is_ok);
}

static void result_read(const cJSON *o, rlt_run_result *r)
{
    *r = (rlt_run_result){.status = (rlt_status)(int)json_number(o, "status"),
                          .is_correct = json_bool(o, "is_correct"),
                          .time_min_ms = json_number(o, "time_min_ms"),
                          .time_median_ms = json_number(o, "time_median_ms"),
                          .gflops = json_number(o, "gflops"),
                          .n_samples = (int)json_number(o, "n_samples"),
                          .number = (int)json_number(o, "number"),
                          .max_error = json_number(o, "max_error"),
                          .build_s = json_number(o, "build_s")};
    const char *message = json_text(o, "message");
    snprintf(r->message, sizeof r->message, "%s", message ? message : "");
}

/* Runs the share built last, one kernel at a time; the results as a JSON
 * array (NULL when out of memory). */
static cJSON *worker_run(worker *wk)
{
    int n_built = 0;
    for (int i = 0; i < wk->n; i++) n_built += wk->built_of[i] >= 0;
    rlt_run_result *results = calloc((size_t)max_int(n_built, 1), sizeof *results);
    cJSON *all = cJSON_CreateArray();
    if (results && all && wk->batch) rlt_measure_run(wk->batch, &wk->run, results);
    for (int i = 0; results && all && i < wk->n; i++) {
        const rlt_run_result *r = wk->built_of[i] >= 0 ? &results[wk->built_of[i]] : &wk->failed[i];
        cJSON *o = result_json(wk->index[i], r);
        if (!o || !cJSON_AddItemToArray(all, o)) {
            cJSON_Delete(o);
            cJSON_Delete(all);
            all = NULL;
        }
    }
    if (!results) {
        cJSON_Delete(all);
        all = NULL;
    }
    free(results);
    worker_drop_share(wk);
    return all;
}

/* ---- messages --------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Waiting without spinning. OpenMPI's blocking calls (MPI_Send of a long
 * message, MPI_Probe, MPI_Recv) spin on a core while they wait, and a rank
 * waiting on a host that times a kernel would take a core from it (at two
 * threads, kernels timed at 2-11% of their speed). So every wait here
 * looks, then sleeps: 1 ms, then twice as long each time, up to 20 ms. */
typedef struct waiting {
    long sleep_ns;
    double give_up_at; /* monotonic seconds; 0: never */
} waiting;

/* Sleeps before the next look; false once give_up_at has passed. */
static bool wait_more(waiting *w)
{
    if (w->give_up_at > 0 && now_s() > w->give_up_at) return false;
    w->sleep_ns = w->sleep_ns <= 0 ? WAIT_POLL_MIN_NS : w->sleep_ns * 2;
    if (w->sleep_ns > WAIT_POLL_MAX_NS) w->sleep_ns = WAIT_POLL_MAX_NS;
    nanosleep(&(struct timespec){.tv_nsec = w->sleep_ns}, NULL);
    return true;
}

/* Sends text to rank `to`; false when it was not taken by give_up_at (0:
 * wait for ever), the rank then taken for lost. */
static bool send_text_by(int to, int tag, const char *text, double give_up_at)
{
    MPI_Request request;
    MPI_Isend(text, text ? (int)strlen(text) + 1 : 0, MPI_CHAR, to, tag, MPI_COMM_WORLD, &request);
    waiting w = {.give_up_at = give_up_at};
    for (;;) {
        int is_done = 0;
        MPI_Test(&request, &is_done, MPI_STATUS_IGNORE);
        if (is_done) return true;
        if (!wait_more(&w)) return false;
    }
}

static void send_text(int to, int tag, const char *text) { send_text_by(to, tag, text, 0); }

/* Sends {"error": message} or the object `o` (consumed; NULL: out of memory). */
static void send_reply(int to, int tag, cJSON *o, const char *error)
{
    if (error) {
        cJSON_Delete(o);
        o = cJSON_CreateObject();
        if (o) cJSON_AddStringToObject(o, "error", error);
    }
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    send_text(to, tag, text ? text : "{\"error\":\"out of memory replying to rank 0\"}");
    cJSON_free(text);
    cJSON_Delete(o);
}

/* The next message for this rank from `from` (MPI_ANY_SOURCE: any): its
 * text (malloc'd, NUL-terminated), tag and source; or NULL with *out_tag
 * -1 once the monotonic clock passes give_up_at (0: wait for ever). */
static char *receive_text(int from, double give_up_at, int *out_tag, int *out_source)
{
    MPI_Status status;
    waiting w = {.give_up_at = give_up_at};
    for (;;) {
        int has_message = 0;
        MPI_Iprobe(from, MPI_ANY_TAG, MPI_COMM_WORLD, &has_message, &status);
        if (has_message) break;
        if (!wait_more(&w)) {
            *out_tag = *out_source = -1;
            return NULL;
        }
    }
    int n = 0;
    MPI_Get_count(&status, MPI_CHAR, &n);
    char *text = malloc((size_t)n + 1);
    MPI_Recv(text ? text : &(char){0}, text ? n : 0, MPI_CHAR, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    if (text) text[n] = '\0';
    *out_tag = status.MPI_TAG;
    *out_source = status.MPI_SOURCE;
    return text;
}

/* Serves rank 0 until TAG_STOP. */
static void serve(void)
{
    worker wk = {0};
    for (;;) {
        int tag, source;
        char *text = receive_text(0, 0, &tag, &source);
        if (tag == TAG_STOP) {
            free(text);
            break;
        }
        cJSON *msg = text ? cJSON_Parse(text) : NULL;
        free(text);
        if (tag == TAG_BUILD) {
            rlt_diag d = {0};
            bool is_ok = msg && worker_build(&wk, msg, &d) == RLT_STATUS_OK;
            cJSON *reply = cJSON_CreateObject();
            send_reply(0, TAG_BUILT, reply, is_ok ? NULL : msg ? d.message : "a batch that is not JSON");
        } else if (tag == TAG_RUN) {
            cJSON *reply = cJSON_CreateObject();
            cJSON *results = worker_run(&wk);
            if (reply && results && cJSON_AddItemToObject(reply, "results", results))
                send_reply(0, TAG_RESULTS, reply, NULL);
            else {
                cJSON_Delete(results);
                send_reply(0, TAG_RESULTS, reply, "out of memory running a share");
            }
        }
        cJSON_Delete(msg);
    }
    worker_free(&wk);
}

/* ---- rank 0: the job and the executor ---------------------------------------- */

typedef struct rank_info {
    char host[MPI_MAX_PROCESSOR_NAME];
    int n_cores;
} rank_info;

static struct {
    bool is_joined;
    int rank, n_ranks;
    int n_hosts;
    int *host_of;       /* rank -> host */
    int *cores_of_host; /* host -> cores (of its first rank) */
    int *order;         /* ranks interleaved by host: candidates go round it */
    rank_info *ranks;   /* every rank's host and cores */
    worker own;         /* rank 0's share */
    rlt_executor executor;
} g;

static cJSON *build_opts_json(const rlt_build_opts *b, int n_parallel)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    bool is_ok = (!b->cc || cJSON_AddStringToObject(o, "cc", b->cc)) &&
                 (!b->cflags || cJSON_AddStringToObject(o, "cflags", b->cflags)) &&
                 (!b->cache_dir || cJSON_AddStringToObject(o, "cache_dir", b->cache_dir)) &&
                 cJSON_AddNumberToObject(o, "timeout_s", b->timeout_s) &&
                 cJSON_AddNumberToObject(o, "n_parallel", n_parallel) &&
                 cJSON_AddNumberToObject(o, "max_per_unit", b->max_per_unit);
    return complete_or_null(o, is_ok);
}

static cJSON *run_opts_json(const rlt_run_opts *r)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    bool is_ok = cJSON_AddNumberToObject(o, "number", r->number) && cJSON_AddNumberToObject(o, "repeat", r->repeat) &&
                 cJSON_AddNumberToObject(o, "min_repeat_ms", r->min_repeat_ms) &&
                 cJSON_AddNumberToObject(o, "warmup", r->warmup) &&
                 cJSON_AddNumberToObject(o, "timeout_s", r->timeout_s) &&
                 cJSON_AddNumberToObject(o, "n_threads", r->n_threads) &&
                 cJSON_AddBoolToObject(o, "no_pin", r->no_pin) &&
                 cJSON_AddNumberToObject(o, "slow_cutoff_ms", r->slow_cutoff_ms) &&
                 cJSON_AddBoolToObject(o, "cold_weights", r->cold_weights);
    return complete_or_null(o, is_ok);
}

/* Rank r's share of a batch as a TAG_BUILD message (malloc'd text; NULL
 * when out of memory): the candidates i with g.order[i % n_ranks] == r. */
static char *share_text(int r, const rlt_op *op, const char *target, const rlt_build_opts *build, int n_parallel,
                        const rlt_run_opts *run, int n, const rlt_candidate *cands)
{
    cJSON *msg = cJSON_CreateObject();
    cJSON *list = cJSON_CreateArray();
    if (!msg || !list || !cJSON_AddItemToObject(msg, "candidates", list)) {
        cJSON_Delete(msg);
        cJSON_Delete(list);
        return NULL;
    }
    bool is_ok = cJSON_AddStringToObject(msg, "spec", rlt_op_spec(op)) &&
                 cJSON_AddStringToObject(msg, "target", target) &&
                 cJSON_AddItemToObject(msg, "build", build_opts_json(build, n_parallel)) &&
                 cJSON_AddItemToObject(msg, "run", run_opts_json(run));
    for (int i = 0; is_ok && i < n; i++) {
        if (g.order[i % g.n_ranks] != r) continue;
        cJSON *c = cJSON_CreateObject();
        is_ok = c && cJSON_AddNumberToObject(c, "i", i) && cJSON_AddStringToObject(c, "schedule", cands[i].schedule) &&
                (!cands[i].cc || cJSON_AddStringToObject(c, "cc", cands[i].cc)) && cJSON_AddItemToArray(list, c);
        if (!is_ok) cJSON_Delete(c); /* not in the list */
    }
    char *text = is_ok ? cJSON_PrintUnformatted(msg) : NULL;
    cJSON_Delete(msg);
    return text;
}

/* Results (a JSON array, as worker_run makes) into out. */
static void results_read(const cJSON *results, rlt_run_result *out, int n)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, results)
    {
        int i = (int)json_number(it, "i");
        if (i >= 0 && i < n) result_read(it, &out[i]);
    }
}

/* A TAG_BUILT or TAG_RESULTS reply of rank r: its results copied into out,
 * or its error. Returns false (with the error in diag) on an error. */
static bool reply_read(int r, const char *text, rlt_run_result *out, int n, rlt_diag *diag)
{
    cJSON *o = text ? cJSON_Parse(text) : NULL;
    const char *error = o ? json_text(o, "error") : "a reply that is not JSON";
    bool is_ok = !error;
    if (error)
        rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "--executor mpi: rank %d (host %.100s): %s", r, g.ranks[r].host,
                 error);
    else
        results_read(cJSON_GetObjectItemCaseSensitive(o, "results"), out, n);
    cJSON_Delete(o);
    return is_ok;
}

/* How long rank 0 waits for a rank's reply before it takes the rank for
 * lost: far more than the share can take (each compile and each run has a
 * time limit of its own), so that only a rank that has stopped meets it;
 * $RLTUNE_MPI_WAIT_S, when set, instead (docs/distributed.md). */
static double reply_limit_s(const rlt_build_opts *build, const rlt_run_opts *run, int n, bool is_build)
{
    const char *env = getenv("RLTUNE_MPI_WAIT_S");
    if (env && atof(env) > 0) return atof(env);
    double compile_s = build->timeout_s > 0 ? build->timeout_s : 60;
    double run_s = run->timeout_s > 0 ? run->timeout_s : 10;
    /* a share is at most the whole batch; its kernels may be compiled
     * twice (a unit that fails is compiled again one kernel at a time) */
    return is_build ? (2.0 * n + 2) * compile_s + 60 : n * (run_s + 10) + 60;
}

/* A rank that has not answered in time: the job ends here (MPI_Abort: a
 * rank that stopped cannot be told to stop), every batch stored before it
 * kept, so that the same command goes on from there. */
static _Noreturn void give_up(int r, const char *what)
{
    rlt_cli_error("--executor mpi: rank %d (host %.100s) has not answered %s: taking it for lost and ending the "
                  "job; every batch stored before is in the records, and the same command goes on from there",
                  r, g.ranks[r].host, what);
    MPI_Abort(MPI_COMM_WORLD, RLT_CLI_EXIT_INTERNAL);
    abort(); /* MPI_Abort does not return */
}

/* Where a rank stands in a batch. */
typedef enum share_state { SHARE_NONE, SHARE_BUILDING, SHARE_BUILT, SHARE_RUNNING, SHARE_DONE } share_state;

static rlt_status mpi_measure(void *ctx, const rlt_op *op, const char *target, const rlt_build_opts *build,
                              const rlt_run_opts *run, int n, const rlt_candidate *cands, rlt_run_result *out,
                              rlt_diag *diag)
{
    (void)ctx;
    int R = g.n_ranks, H = g.n_hosts;
    /* per rank: its share's state; per host: ranks compiling, a rank timing now */
    share_state *state = calloc((size_t)R, sizeof *state);
    int *working_on_host = calloc((size_t)H, sizeof *working_on_host);
    bool *host_busy = calloc((size_t)H, sizeof *host_busy);
    double *due = calloc((size_t)R, sizeof *due); /* when a rank's reply is late */
    if (!state || !working_on_host || !host_busy || !due) {
        free(due);
        free(state);
        free(working_on_host);
        free(host_busy);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory sharing a batch over the ranks");
    }
    for (int i = 0; i < n; i++) {
        out[i] = (rlt_run_result){.status = RLT_STATUS_IO_ERROR};
        snprintf(out[i].message, sizeof out[i].message, "no rank measured it");
        if (state[g.order[i % R]] == SHARE_NONE) {
            state[g.order[i % R]] = SHARE_BUILDING;
            working_on_host[g.host_of[g.order[i % R]]]++;
        }
    }
    rlt_status st = RLT_STATUS_OK;
    char *own_text = NULL;
    for (int r = 0; r < R; r++) {
        if (state[r] != SHARE_BUILDING) continue;
        int h = g.host_of[r];
        int n_parallel = max_int(1, g.cores_of_host[h] / working_on_host[h]);
        char *text = share_text(r, op, target, build, n_parallel, run, n, cands);
        if (!text) {
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory sharing a batch over the ranks");
            state[r] = SHARE_NONE; /* never sent */
            working_on_host[h]--;
            continue;
        }
        if (r == 0) {
            own_text = text;
            continue;
        }
        due[r] = now_s() + reply_limit_s(build, run, n, true);
        if (!send_text_by(r, TAG_BUILD, text, due[r])) give_up(r, "to take its share");
        free(text);
    }
    /* rank 0's own share, compiled while the others compile theirs */
    if (own_text) {
        cJSON *msg = cJSON_Parse(own_text);
        rlt_diag d = {0};
        if (!msg || worker_build(&g.own, msg, &d) != RLT_STATUS_OK) {
            if (st == RLT_STATUS_OK)
                st = rlt_fail(diag, msg ? d.status : RLT_STATUS_OUT_OF_MEMORY, "--executor mpi: rank 0: %s",
                              msg ? d.message : "out of memory");
            state[0] = SHARE_DONE;
        } else {
            state[0] = SHARE_BUILT;
        }
        working_on_host[g.host_of[0]]--;
        cJSON_Delete(msg);
        free(own_text);
    }
    /* Until every rank sent has replied: a host times once none of its
     * ranks compiles, one rank at a time; the other hosts first, so that
     * rank 0's own runs do not hold them up. */
    for (;;) {
        for (int pass = 0; pass < 2; pass++) {
            for (int r = 0; r < R; r++) {
                int h = g.host_of[r];
                bool is_turn = (r == 0) == (pass == 1);
                if (!is_turn || state[r] != SHARE_BUILT || host_busy[h] || working_on_host[h] > 0) continue;
                if (r != 0) {
                    due[r] = now_s() + reply_limit_s(build, run, n, false);
                    if (!send_text_by(r, TAG_RUN, "", due[r])) give_up(r, "to time its share");
                    state[r] = SHARE_RUNNING;
                    host_busy[h] = true;
                    continue;
                }
                cJSON *results = worker_run(&g.own);
                if (results)
                    results_read(results, out, n);
                else if (st == RLT_STATUS_OK)
                    st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "--executor mpi: rank 0: out of memory");
                cJSON_Delete(results);
                state[0] = SHARE_DONE;
            }
        }
        int first_due = -1; /* the rank whose reply is due first */
        for (int r = 1; r < R; r++)
            if ((state[r] == SHARE_BUILDING || state[r] == SHARE_RUNNING) && (first_due < 0 || due[r] < due[first_due]))
                first_due = r;
        if (first_due < 0) break;
        int tag, source;
        char *text = receive_text(MPI_ANY_SOURCE, due[first_due], &tag, &source);
        if (tag < 0)
            give_up(first_due, state[first_due] == SHARE_BUILDING ? "with its compiled share" : "with its timings");
        rlt_diag d = {0};
        bool is_ok = reply_read(source, text, out, n, &d);
        free(text);
        int h = g.host_of[source];
        if (tag == TAG_BUILT && state[source] == SHARE_BUILDING) {
            working_on_host[h]--;
            state[source] = is_ok ? SHARE_BUILT : SHARE_DONE;
        } else if (tag == TAG_RESULTS && state[source] == SHARE_RUNNING) {
            host_busy[h] = false;
            state[source] = SHARE_DONE;
        }
        if (!is_ok && st == RLT_STATUS_OK) st = rlt_fail(diag, d.status, "%s", d.message);
    }
    free(due);
    free(state);
    free(working_on_host);
    free(host_busy);
    return st;
}

const rlt_executor *rlt_cli_executor_mpi(void)
{
    if (!g.is_joined) {
        rlt_cli_error("--executor mpi must be on the command line that mpirun starts, e.g. mpirun -np 3 rltune "
                      "tune ... --executor mpi");
        return NULL;
    }
    return &g.executor;
}

/* Every rank's host and cores, gathered at rank 0: hosts numbered in order
 * of their first rank, the ranks interleaved by host. */
static bool learn_layout(void)
{
    rank_info mine = {0};
    int len = 0;
    MPI_Get_processor_name(mine.host, &len);
    rlt_machine m;
    rlt_machine_detect(&m);
    mine.n_cores = m.n_cores;
    rank_info *all = g.rank == 0 ? calloc((size_t)g.n_ranks, sizeof *all) : NULL;
    MPI_Gather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (g.rank != 0) return true;
    g.host_of = calloc((size_t)g.n_ranks, sizeof *g.host_of);
    g.cores_of_host = calloc((size_t)g.n_ranks, sizeof *g.cores_of_host);
    g.order = calloc((size_t)g.n_ranks, sizeof *g.order);
    int *first_of_host = calloc((size_t)g.n_ranks, sizeof *first_of_host);
    g.ranks = all;
    if (!all || !g.host_of || !g.cores_of_host || !g.order || !first_of_host) {
        free(first_of_host);
        return false;
    }
    for (int r = 0; r < g.n_ranks; r++) {
        int h = 0;
        while (h < g.n_hosts && strcmp(all[first_of_host[h]].host, all[r].host) != 0) h++;
        if (h == g.n_hosts) {
            first_of_host[g.n_hosts++] = r;
            g.cores_of_host[h] = max_int(all[r].n_cores, 1);
        }
        g.host_of[r] = h;
    }
    /* round k takes the k-th rank of every host that has one */
    int n = 0;
    for (int k = 0; n < g.n_ranks; k++)
        for (int h = 0; h < g.n_hosts; h++) {
            int seen = 0;
            for (int r = 0; r < g.n_ranks; r++)
                if (g.host_of[r] == h && seen++ == k) g.order[n++] = r;
        }
    fprintf(stderr, "rltune: --executor mpi: %d rank%s on %d host%s:", g.n_ranks, g.n_ranks == 1 ? "" : "s",
            g.n_hosts, g.n_hosts == 1 ? "" : "s");
    for (int h = 0; h < g.n_hosts; h++) {
        int count = 0;
        for (int r = 0; r < g.n_ranks; r++) count += g.host_of[r] == h;
        fprintf(stderr, "%s %s (%d rank%s, %d cores)", h ? "," : "", all[first_of_host[h]].host, count,
                count == 1 ? "" : "s", g.cores_of_host[h]);
    }
    fprintf(stderr, "\n");
    free(first_of_host);
    return true;
}

/* Rank 0's SIGUSR1 (`kill -USR1` of mpirun, which passes it on): stop
 * after the batch in flight, as a local run's first Ctrl-C does. */
static void on_stop_signal(int sig)
{
    (void)sig;
    rlt_cli_stop_requested = 1;
}

bool rlt_cli_executor_join(int argc, char **argv, int *out_exit)
{
    if (!rlt_cli_executor_wants_mpi(argc, argv)) return false;
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        rlt_cli_error("--executor mpi: MPI_Init failed: start the command with mpirun (docs/distributed.md)");
        *out_exit = RLT_CLI_EXIT_INTERNAL;
        return true;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g.n_ranks);
    /* mpirun binds a rank to a core or a socket; rltune places its own
     * compilers and pins each timed child itself, on all of the host */
    cpu_set_t every;
    CPU_ZERO(&every);
    for (long c = 0; c < sysconf(_SC_NPROCESSORS_CONF) && c < CPU_SETSIZE; c++) CPU_SET((int)c, &every);
    sched_setaffinity(0, sizeof every, &every);
    bool is_ok = learn_layout();
    if (g.rank != 0) {
        /* mpirun passes SIGUSR1 on to every rank: rank 0 stops after the
         * batch in flight, as on Ctrl-C in a local run, and then tells the
         * others; a Ctrl-C at the terminal may reach them too, but mpirun
         * itself then ends the job (docs/distributed.md) */
        signal(SIGUSR1, SIG_IGN);
        signal(SIGINT, SIG_IGN);
        serve();
        MPI_Finalize();
        *out_exit = RLT_CLI_EXIT_OK;
        return true;
    }
    if (!is_ok) {
        rlt_cli_error("--executor mpi: out of memory learning the job's layout");
        rlt_cli_executor_leave();
        *out_exit = RLT_CLI_EXIT_INTERNAL;
        return true;
    }
    g.is_joined = true;
    g.executor = (rlt_executor){.measure = mpi_measure};
    struct sigaction sa = {0};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    return false;
}

void rlt_cli_executor_leave(void)
{
    if (g.n_ranks == 0 || g.rank != 0) return; /* not joined, or not rank 0 */
    for (int r = 1; r < g.n_ranks; r++) send_text(r, TAG_STOP, "");
    worker_free(&g.own);
    free(g.host_of);
    free(g.cores_of_host);
    free(g.order);
    free(g.ranks);
    g.host_of = g.cores_of_host = g.order = NULL;
    g.ranks = NULL;
    g.is_joined = false;
    g.n_ranks = 0;
    MPI_Finalize();
}
