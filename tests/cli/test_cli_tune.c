/* End-to-end tests of `rltune tune` (src/cli/cmd_tune.c, src/search/tune.c)
 * when something happens to a run, with the real binary:
 * - kill -9 of its process group in the middle: the database opens and
 *   passes SQLite's integrity check, holds a whole number of batches and at
 *   least every record seen before the kill; the same command again reads
 *   those back (from_records) and measures only the rest;
 * - two runs (different ops) writing one new database at once: both exit 0,
 *   their records overlap in time, and each op has exactly its trials;
 * - on a terminal (a pseudo-terminal from forkpty) a progress line per
 *   batch: trials done/total, best GFLOP/s, trials per second, ETA; with
 *   stdout a pipe, none of it (test_cli.c checks the pipe only with --json,
 *   which turns the line off by itself);
 * - Ctrl-C (SIGINT to the tune process only) while a batch is in flight:
 *   it finishes and stores that batch and starts no other, exits 0 with
 *   "interrupted", and every trial it reports is in the database, measured
 *   OK (a measurement broken by the signal would not be); a second Ctrl-C
 *   ends it at once (killed by SIGINT, the batch in flight not stored, the
 *   database sound); two SIGINTs back to back, as timeout(1) sends them,
 *   are one Ctrl-C.
 * Tiny ops (16x16x16 matmul at -O1, one timed sample, batches of 4). The
 * runs that must be caught in the middle use a private, empty compile
 * cache, so that every batch compiles (about 0.5 s); the Ctrl-C tests also
 * compile through a script that takes 1.5 s longer and leaves marks, so
 * that the signal is sent while a batch certainly is in flight. The other
 * runs use $RLTUNE_CACHE_DIR (set by CTest). */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "../common/db_check.h"
#include "../common/json.h"
#include "../common/procs.h"
#include "../common/tmp.h"
#include "cli_runner.h"
#include "db/db.h"

#define OP "matmul:M=16,N=16,K=16"
#define OP2 "matmul:M=16,N=16,K=8"
#define TUNE_CFLAGS "-O1 -march=native"
#define BATCH 4
#define BATCH_TEXT "4"
#define TRIALS 24
#define TRIALS_TEXT "24"

static char tmp_dir[] = "/tmp/rlt_cli_tune_XXXXXX";

static void setup(void) { tmp_dir_use(tmp_dir); }

/* The runs this test started (cli_spawn), so that teardown can end those
 * a failed assertion left running. */
static pid_t started[8];
static int n_started;

static pid_t start_run(const char *const *args, const char *out_path, const char *err_path)
{
    cr_assert_lt(n_started, 8);
    pid_t pid = cli_spawn(args, out_path, err_path);
    started[n_started++] = pid;
    return pid;
}

/* Ends the runs still going (a child not yet waited for: waitpid answers
 * 0), then waits for what works under the test's directory: a killed run's
 * compilers run in their own process groups and finish on their own,
 * writing into the private cache. Then removes the directory. */
static void teardown(void)
{
    for (int i = 0; i < n_started; i++)
        if (waitpid(started[i], NULL, WNOHANG) == 0) {
            kill(-started[i], SIGKILL);
            waitpid(started[i], NULL, 0);
        }
    double t0 = now_s();
    while (count_processes_with(tmp_dir) > 0 && now_s() - t0 < 30) sleep_ms(50);
    tmp_remove_tree(tmp_dir);
}

TestSuite(cli_tune, .init = setup, .fini = teardown, .timeout = 120);

/* The compile cache of this test's runs (inherited by the processes it
 * starts): new and empty, so every batch compiles. */
static void use_private_cache(void) { cr_assert_eq(setenv("RLTUNE_CACHE_DIR", tmp_path("cache"), 1), 0); }

/* ---- the records database ----------------------------------------------- */

/* Records of `spec` in the database at `path`, read through a read-only
 * handle; -1 while it cannot be opened yet (absent, or its schema not yet
 * committed by the run creating it). */
static int64_t db_count(const char *path, const char *spec)
{
    rlt_db *db = NULL;
    rlt_diag d = {0};
    if (rlt_db_open(path, &(rlt_db_opts){.is_read_only = true}, &db, &d) != RLT_STATUS_OK) return -1;
    int64_t n = -1;
    rlt_status st = rlt_db_count(db, spec, &n, &d);
    rlt_db_close(db);
    cr_assert_eq(st, RLT_STATUS_OK, "count: %s", d.message);
    return n;
}

/* Opens the database read-write, as the next run would (recovering what a
 * killed writer left in its WAL), and returns the number of records of
 * `spec`; then asks SQLite whether the file is sound. */
static int64_t db_count_checked(const char *path, const char *spec)
{
    rlt_db *db = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_db_open(path, NULL, &db, &d), RLT_STATUS_OK, "the database does not open: %s", d.message);
    int64_t n = -1;
    cr_assert_eq(rlt_db_count(db, spec, &n, &d), RLT_STATUS_OK, "count: %s", d.message);
    rlt_db_close(db);

    assert_db_sound(path);
    return n;
}

/* Waits until the database holds at least `n_min` records of `spec` and
 * returns how many it saw; fails if the run ends first. */
static int64_t wait_for_records(pid_t pid, const char *db, const char *spec, int64_t n_min, const char *err_path)
{
    double t0 = now_s();
    for (;;) {
        int64_t n = db_count(db, spec);
        if (n >= n_min) return n;
        int status = 0;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            char *err = tmp_file_read(err_path, NULL);
            cr_assert_fail("tune ended (status %d) with %lld records, before %lld were stored; stderr:\n%s", status,
                           (long long)n, (long long)n_min, err);
        }
        if (now_s() - t0 > RUN_LIMIT_S) {
            kill(-pid, SIGKILL);
            waitpid(pid, &status, 0);
            cr_assert_fail("%lld records after %d s", (long long)n, RUN_LIMIT_S);
        }
        sleep_ms(20);
    }
}

typedef struct time_span {
    double first_s, last_s;
    int n, n_not_ok;
    char first_not_ok[600];
} time_span;

static bool span_add(const rlt_record *r, void *ctx)
{
    time_span *s = ctx;
    if (s->n == 0 || r->created_s < s->first_s) s->first_s = r->created_s;
    if (s->n == 0 || r->created_s > s->last_s) s->last_s = r->created_s;
    s->n++;
    if (r->status != RLT_STATUS_OK && s->n_not_ok++ == 0)
        snprintf(s->first_not_ok, sizeof s->first_not_ok, "%s: %s", rlt_status_str(r->status), r->message);
    return true;
}

/* When the records of `spec` were made, and how many are not OK. */
static time_span db_span(const char *path, const char *spec)
{
    rlt_db *db = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_db_open(path, &(rlt_db_opts){.is_read_only = true}, &db, &d), RLT_STATUS_OK, "%s", d.message);
    time_span s = {0};
    cr_assert_eq(rlt_db_history(db, spec, NULL, span_add, &s, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_db_close(db);
    return s;
}

/* ---- JSON --------------------------------------------------------------- */

/* ---- kill -9 -------------------------------------------------------------- */

Test(cli_tune, kill_9_loses_at_most_the_batch_in_flight_and_the_rerun_resumes)
{
    use_private_cache();
    const char *db = tmp_path("killed.db"), *out = tmp_path("out"), *err = tmp_path("err");
    const char *const args[] = {"tune", "--final", "0", "--seeds", "0", "--op", OP, "--tuner", "random", "--trials", TRIALS_TEXT,
                                "--batch", BATCH_TEXT, "--seed", "11", "--cflags", TUNE_CFLAGS, "--repeat", "1",
                                "--min-repeat-ms", "0.5", "--db", db, "--json", NULL};
    pid_t pid = start_run(args, out, err);
    /* two batches stored, four to go: it is in the middle of one */
    int64_t n_seen = wait_for_records(pid, db, OP, 2 * BATCH, err);
    cr_assert_eq(kill(-pid, SIGKILL), 0);
    int status = cli_wait(pid, 10);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "tune ended before the kill (status %d)", status);

    int64_t n = db_count_checked(db, OP);
    cr_log_info("kill -9 with %lld records seen: %lld stored", (long long)n_seen, (long long)n);
    cr_assert_geq(n, n_seen, "records seen before the kill were lost");
    cr_assert_leq(n, n_seen + BATCH, "more than one batch ended between the last look and the kill");
    cr_assert_lt(n, TRIALS);
    cr_assert_eq(n % BATCH, 0, "%lld records: part of a batch was stored", (long long)n);

    /* The same command again: what was stored is read back, the rest measured. */
    cli_run r = run_cli_argv(NULL, args);
    assert_ok(&r);
    cJSON *o = json_parse_object(r.out);
    cr_assert_eq(json_number_at(o, "trials"), TRIALS);
    cr_assert_eq(json_number_at(o, "from_records"), (double)n, "read back %g of the %lld stored",
                 json_number_at(o, "from_records"), (long long)n);
    cr_assert_eq(json_number_at(o, "measured"), (double)(TRIALS - n));
    cr_assert_not(json_bool_at(o, "interrupted"));
    cJSON_Delete(o);
    cli_run_free(&r);
    cr_assert_eq(db_count_checked(db, OP), TRIALS, "the rerun stored something twice or not at all");
}

/* ---- an identical rerun --------------------------------------------------- */

/* A finished run, run again with the same op, tuner, seed, trials and
 * database, measures nothing: every proposal is read back, and the tuner
 * hears the scores it heard the first time (not the final pick's, which
 * would send a model-based tuner elsewhere: before schema v2, 14 to 26 of
 * the 48 were measured again). */
Test(cli_tune, an_identical_rerun_measures_nothing_new)
{
    use_private_cache();
    const char *db = tmp_path("rerun.db");
    const char *op = "matmul:M=128,N=128,K=128";
    const char *const args[] = {"tune", "--op", op, "--tuner", "xgb", "--trials", "48", "--seed", "1", "--cflags",
                                TUNE_CFLAGS, "--repeat", "1", "--min-repeat-ms", "0.5", "--db", db, "--json", NULL};
    cli_run r = run_cli_argv(NULL, args);
    assert_ok(&r);
    cJSON *o = json_parse_object(r.out);
    cr_assert_eq(json_number_at(o, "measured"), 48);
    cr_assert_gt(json_number_at(cJSON_GetObjectItemCaseSensitive(o, "final"), "candidates"), 0,
                 "the first run must make a final pick for the rerun to be tested against it");
    cJSON_Delete(o);
    cli_run_free(&r);
    int64_t n_first = db_count_checked(db, op);
    for (int again = 0; again < 2; again++) {
        r = run_cli_argv(NULL, args);
        assert_ok(&r);
        o = json_parse_object(r.out);
        cr_assert_eq(json_number_at(o, "measured"), 0, "rerun %d measured %g", again, json_number_at(o, "measured"));
        cr_assert_eq(json_number_at(o, "from_records"), 48);
        cJSON_Delete(o);
        cli_run_free(&r);
        cr_assert_eq(db_count_checked(db, op), n_first, "rerun %d added records", again);
    }
}

/* ---- two writers ---------------------------------------------------------- */

Test(cli_tune, two_runs_writing_one_database_at_once_both_store_everything)
{
    use_private_cache(); /* both compile every batch: the runs overlap */
    const char *db = tmp_path("shared.db");
    const char *specs[2] = {OP, OP2};
    const char *seeds[2] = {"1", "2"};
    char out[2][320], err[2][320];
    pid_t pids[2];
    for (int i = 0; i < 2; i++) {
        snprintf(out[i], sizeof out[i], "%s", tmp_path(i ? "out2" : "out1"));
        snprintf(err[i], sizeof err[i], "%s", tmp_path(i ? "err2" : "err1"));
        /* batches of 2: many small transactions from each */
        const char *const args[] = {"tune", "--final", "0", "--op", specs[i], "--tuner", "random", "--trials", "8", "--batch", "2",
                                    "--seed", seeds[i], "--cflags", TUNE_CFLAGS, "--repeat", "1", "--min-repeat-ms",
                                    "0.5", "--db", db, "--json", NULL};
        pids[i] = start_run(args, out[i], err[i]);
    }
    for (int i = 0; i < 2; i++) {
        int status = cli_wait(pids[i], RUN_LIMIT_S);
        char *err_text = tmp_file_read(err[i], NULL);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "run %d: status %d, stderr:\n%s", i, status,
                  err_text);
        free(err_text);
    }
    time_span spans[2];
    for (int i = 0; i < 2; i++) {
        char *text = tmp_file_read(out[i], NULL);
        cJSON *o = json_parse_object(text);
        cr_assert_str_eq(cJSON_GetObjectItem(o, "op")->valuestring, specs[i]);
        cr_assert_eq(json_number_at(o, "trials"), 8);
        cr_assert_eq(json_number_at(o, "measured"), 8);
        cr_assert_eq(json_number_at(o, "from_records"), 0);
        cJSON_Delete(o);
        free(text);
        cr_assert_eq(db_count_checked(db, specs[i]), 8, "records of %s", specs[i]);
        spans[i] = db_span(db, specs[i]);
    }
    cr_assert_eq(db_count_checked(db, NULL), 16);
    cr_assert(spans[0].first_s < spans[1].last_s && spans[1].first_s < spans[0].last_s,
              "the runs did not write at the same time: [%.3f, %.3f] and [%.3f, %.3f]", spans[0].first_s,
              spans[0].last_s, spans[1].first_s, spans[1].last_s);
}

/* ---- the progress line ---------------------------------------------------- */

/* Runs RLTUNE_BINARY with `args` on a new pseudo-terminal (stdin, stdout
 * and stderr) and returns all it wrote there; *out_status is its wait
 * status. */
static char *run_on_terminal(const char *const *args, int *out_status)
{
    const char *argv[CLI_MAX_ARGS + 2];
    cli_argv_fill(argv, args);
    struct winsize ws = {.ws_row = 24, .ws_col = 200};
    int master = -1;
    pid_t pid = forkpty(&master, NULL, NULL, &ws);
    cr_assert_geq(pid, 0, "forkpty: %s", strerror(errno));
    if (pid == 0) {
        execv(RLTUNE_BINARY, (char *const *)argv);
        _exit(127);
    }
    char *text = NULL;
    size_t len = 0;
    append_bytes(&text, &len, "", 0);
    double t0 = now_s();
    for (;;) {
        if (now_s() - t0 > RUN_LIMIT_S) {
            kill(pid, SIGKILL);
            waitpid(pid, out_status, 0);
            cr_assert_fail("rltune ran past %d s on the terminal; it wrote:\n%s", RUN_LIMIT_S, text);
        }
        struct pollfd pfd = {.fd = master, .events = POLLIN};
        int ready = poll(&pfd, 1, 200);
        if (ready < 0 && errno == EINTR) continue;
        cr_assert_geq(ready, 0);
        if (ready == 0) continue;
        char buf[4096];
        ssize_t got = read(master, buf, sizeof buf);
        if (got > 0) {
            append_bytes(&text, &len, buf, (size_t)got);
            continue;
        }
        if (got < 0 && errno == EINTR) continue;
        break; /* EIO: the terminal's other side is closed, the program has ended */
    }
    close(master);
    cr_assert_eq(waitpid(pid, out_status, 0), pid);
    return text;
}

Test(cli_tune, progress_line_on_a_terminal_and_none_on_a_pipe)
{
    /* no seeds: they would be a batch of their own before the two counted here */
    const char *const args[] = {"tune", "--final", "0", "--seeds", "0", "--op", OP, "--tuner", "random", "--trials", "8",
                                "--batch", BATCH_TEXT, "--seed", "3", "--cflags", TUNE_CFLAGS, "--repeat", "1",
                                "--min-repeat-ms", "0.5", "--db", tmp_path("tty.db"), NULL};
    int status = 0;
    char *text = run_on_terminal(args, &status);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d; the terminal got:\n%s", status, text);

    /* One line per batch, each redrawn in place: carriage return, erase to
     * the end of the line, then "[tune] done/total trials, best G GFLOP/s,
     * R trials/s, ETA E s". */
    int n_lines = 0, done[8] = {0}, total = 0;
    double best[8] = {0}, rate[8] = {0}, eta[8] = {0};
    for (const char *p = strstr(text, "[tune] "); p; p = strstr(p + 1, "[tune] ")) {
        cr_assert_lt(n_lines, 8, "too many progress lines:\n%s", text);
        cr_assert(p - text >= 4 && strncmp(p - 4, "\r\033[K", 4) == 0, "not redrawn in place:\n%s", text);
        int got = sscanf(p, "[tune] %d/%d trials, best %lf GFLOP/s, %lf trials/s, ETA %lf s", &done[n_lines], &total,
                         &best[n_lines], &rate[n_lines], &eta[n_lines]);
        cr_assert_eq(got, 5, "progress line %d does not read as documented:\n%s", n_lines + 1, p);
        cr_assert_eq(total, 8);
        n_lines++;
    }
    cr_assert_eq(n_lines, 2, "%d progress lines for 2 batches:\n%s", n_lines, text);
    cr_assert_eq(done[0], BATCH);
    cr_assert_eq(done[1], 8);
    cr_assert_gt(best[0], 0);
    cr_assert_geq(best[1], best[0], "the best GFLOP/s went down");
    for (int i = 0; i < n_lines; i++) {
        cr_assert_gt(rate[i], 0, "progress line %d: no trials per second", i + 1);
        /* the ETA is the trials left at that rate, to the second */
        double left_s = (total - done[i]) / rate[i];
        cr_assert(fabs(eta[i] - left_s) <= 0.5 + 0.05 * left_s, "progress line %d: ETA %g s for %d trials at %g/s",
                  i + 1, eta[i], total - done[i], rate[i]);
    }
    cr_assert_eq(eta[1], 0);
    /* The report comes after the last progress line, on a line of its own. */
    const char *report = strstr(text, "op:        " OP);
    cr_assert_not_null(report, "no report:\n%s", text);
    cr_assert(report > strstr(text, "[tune] 8/8"), "the report is not after the last progress line:\n%s", text);
    free(text);

    /* stdout a pipe, the same report without --json: no progress at all */
    const char *const pipe_args[] = {"tune", "--final", "0", "--seeds", "0", "--op", OP, "--tuner", "random", "--trials",
                                     "8", "--batch", BATCH_TEXT, "--seed", "3", "--cflags", TUNE_CFLAGS, "--repeat", "1",
                                     "--min-repeat-ms", "0.5", "--db", tmp_path("pipe.db"), NULL};
    cli_run r = run_cli_argv(NULL, pipe_args);
    assert_ok(&r);
    assert_has(r.out, "op:        " OP, "the report");
    assert_has(r.out, "trials:    8 (8 measured", "the report");
    cr_assert_null(strstr(r.out, "[tune]"), "progress on a pipe:\n%s", r.out);
    cr_assert_null(strchr(r.out, '\r'), "a carriage return on a pipe:\n%s", r.out);
    cr_assert_null(strchr(r.out, '\033'), "an escape sequence on a pipe:\n%s", r.out);
    cli_run_free(&r);
}

/* ---- Ctrl-C --------------------------------------------------------------- */

/* A compiler that takes SLOW_CC_S seconds longer for the tuned kernels
 * (-O1; not the reference, built at -O2), so that a batch in flight is
 * certainly in flight: a script in the test's bin/ that, around its work,
 * leaves marks/PID.start and marks/PID.end. A `clang` that fails comes first
 * on PATH (inherited by the runs), so the space offers no clang knob, whose
 * kernels would not go through the script. Returns the script's path. */
#define SLOW_CC_S 1.5

static char marks_dir[320];

static const char *use_slow_compiler(void)
{
    use_private_cache();
    snprintf(marks_dir, sizeof marks_dir, "%s", tmp_path("marks"));
    cr_assert_eq(mkdir(tmp_path("bin"), 0755), 0);
    cr_assert_eq(mkdir(marks_dir, 0755), 0);
    static char script_path[320];
    snprintf(script_path, sizeof script_path, "%s", tmp_path("bin/slow-cc"));
    char script[1024];
    snprintf(script, sizeof script,
             "#!/bin/sh\n"
             "case \" $* \" in\n"
             "*\" -O1 \"*) : > \"%s/$$.start\"; sleep %g; gcc \"$@\"; rc=$?; : > \"%s/$$.end\"; exit $rc ;;\n"
             "esac\n"
             "exec gcc \"$@\"\n",
             marks_dir, SLOW_CC_S, marks_dir);
    tmp_file_write_text(script_path, script);
    cr_assert_eq(chmod(script_path, 0755), 0);
    const char *clang = tmp_path("bin/clang");
    tmp_file_write_text(clang, "#!/bin/sh\nexit 1\n");
    cr_assert_eq(chmod(clang, 0755), 0);
    char path[8192];
    snprintf(path, sizeof path, "%s:%s", tmp_path("bin"), getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    cr_assert_eq(setenv("PATH", path, 1), 0);
    return script_path;
}

/* Whether the slow compiler is at work on a compile it began less than
 * `max_age_s` ago (a .start mark without its .end). */
static bool fresh_compile_running(double max_age_s)
{
    DIR *d = opendir(marks_dir);
    cr_assert_not_null(d);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    bool is_running = false;
    struct dirent *e;
    while (!is_running && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 7 || strcmp(e->d_name + len - 6, ".start") != 0) continue;
        char start[640], end[640];
        snprintf(start, sizeof start, "%s/%s", marks_dir, e->d_name);
        snprintf(end, sizeof end, "%s/%.*s.end", marks_dir, (int)(len - 6), e->d_name);
        struct stat st;
        if (stat(start, &st) != 0 || access(end, F_OK) == 0) continue;
        double age = (double)(now.tv_sec - st.st_mtim.tv_sec) + (double)(now.tv_nsec - st.st_mtim.tv_nsec) * 1e-9;
        is_running = age < max_age_s;
    }
    closedir(d);
    return is_running;
}

/* Waits until `pid` has stored a batch and is compiling a new one, which
 * has about SLOW_CC_S seconds to go. */
static void wait_for_batch_in_flight(pid_t pid, const char *db, const char *err_path)
{
    wait_for_records(pid, db, OP, BATCH, err_path);
    double t0 = now_s();
    while (!fresh_compile_running(0.3)) {
        int status = 0;
        if (waitpid(pid, &status, WNOHANG) == pid)
            cr_assert_fail("tune ended (status %d) before a second batch", status);
        cr_assert_lt(now_s() - t0, RUN_LIMIT_S, "no compile started in %d s", RUN_LIMIT_S);
        sleep_ms(10);
    }
}

/* Starts the tune run the Ctrl-C tests interrupt (a slow compiler: each
 * batch compiles for about SLOW_CC_S seconds) into db with this seed, and
 * waits until it has stored a batch and compiles the next. */
static pid_t start_run_to_interrupt(const char *db, const char *seed, const char *out, const char *err)
{
    const char *cc = use_slow_compiler();
    const char *const args[] = {"tune", "--final", "0", "--op", OP, "--tuner", "random", "--trials", TRIALS_TEXT, "--batch",
                                BATCH_TEXT, "--seed", seed, "--cc", cc, "--cflags", TUNE_CFLAGS, "--repeat", "1",
                                "--min-repeat-ms", "0.5", "--db", db, "--json", NULL};
    pid_t pid = start_run(args, out, err);
    wait_for_batch_in_flight(pid, db, err);
    return pid;
}

Test(cli_tune, ctrl_c_stops_after_the_batch_in_flight_with_everything_stored)
{
    const char *db = tmp_path("int.db"), *out = tmp_path("out"), *err = tmp_path("err");
    pid_t pid = start_run_to_interrupt(db, "4", out, err);
    int64_t n_stored = db_count(db, OP); /* the batch in flight cannot end in the next second */
    cr_assert_eq(kill(pid, SIGINT), 0);  /* the tune process only, not its children */
    int status = cli_wait(pid, RUN_LIMIT_S);
    char *out_text = tmp_file_read(out, NULL), *err_text = tmp_file_read(err, NULL);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d (docs/cli.md: exit 0), stderr:\n%s", status,
              err_text);
    cr_assert_null(strstr(err_text, "rltune: error"), "stderr:\n%s", err_text);

    cJSON *o = json_parse_object(out_text);
    cr_assert(json_bool_at(o, "interrupted"));
    int n_trials = (int)json_number_at(o, "trials");
    cr_log_info("Ctrl-C with %lld records stored and a batch in flight: stopped after %d trials", (long long)n_stored,
                n_trials);
    cr_assert_lt(n_trials, TRIALS, "ran to the end after Ctrl-C");
    cr_assert_eq(n_trials, n_stored + BATCH, "%lld trials stored before Ctrl-C, %d after: the batch in flight was %s",
                 (long long)n_stored, n_trials, n_trials <= n_stored ? "dropped" : "not the last");
    cr_assert_eq(json_number_at(o, "measured"), n_trials);
    cr_assert_eq(json_number_at(o, "from_records"), 0);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(o, "curve")), n_trials);
    cJSON_Delete(o);
    free(out_text);
    free(err_text);

    /* every measurement made is stored, and none was broken by the signal */
    cr_assert_eq(db_count_checked(db, OP), n_trials);
    time_span s = db_span(db, OP);
    cr_assert_eq(s.n_not_ok, 0, "%d records not OK, e.g. %s", s.n_not_ok, s.first_not_ok);
}

Test(cli_tune, a_second_ctrl_c_ends_the_run_at_once)
{
    const char *db = tmp_path("int2.db"), *out = tmp_path("out"), *err = tmp_path("err");
    pid_t pid = start_run_to_interrupt(db, "5", out, err);
    int64_t n_stored = db_count(db, OP);
    cr_assert(process_catches_sigint(pid), "tune has no SIGINT handler while it runs");
    cr_assert_eq(kill(pid, SIGINT), 0);
    /* A SIGINT within a quarter of a second of the first is the same one
     * (cmd_tune.c): the second Ctrl-C comes later, while the batch in
     * flight still compiles (SLOW_CC_S). */
    sleep_ms(300);
    cr_assert(process_catches_sigint(pid), "the SIGINT handler is gone after the first Ctrl-C");
    cr_assert_eq(kill(pid, SIGINT), 0);
    int status = cli_wait(pid, 10);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT, "not ended by the second SIGINT (status %d)",
              status);
    cr_assert_eq(db_count_checked(db, OP), n_stored, "the batch in flight was stored: the run did not end at once");
}

/* timeout -s INT signals the command and then its process group: one
 * interrupt that arrives twice, microseconds apart. It is one Ctrl-C: the
 * batch in flight is stored and the report printed. */
Test(cli_tune, one_interrupt_delivered_twice_is_one_ctrl_c)
{
    const char *db = tmp_path("int3.db"), *out = tmp_path("out"), *err = tmp_path("err");
    pid_t pid = start_run_to_interrupt(db, "6", out, err);
    int64_t n_stored = db_count(db, OP);
    cr_assert_eq(kill(pid, SIGINT), 0);
    cr_assert_eq(kill(pid, SIGINT), 0);
    int status = cli_wait(pid, RUN_LIMIT_S);
    char *out_text = tmp_file_read(out, NULL), *err_text = tmp_file_read(err, NULL);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d, stderr:\n%s", status, err_text);
    cJSON *o = json_parse_object(out_text);
    cr_assert(json_bool_at(o, "interrupted"));
    cr_assert_eq(json_number_at(o, "trials"), n_stored + BATCH, "the batch in flight was stored");
    cJSON_Delete(o);
    free(out_text);
    free(err_text);
}

/* ---- hyper-parameters and saved agents ---------------------------------- */

Test(cli_tune, tuner_options_come_from_the_command_line_and_a_file_and_are_checked)
{
    cli_run r = CLI("tuners", "--tuner", "dqn");
    assert_ok(&r);
    assert_has(r.out, "dqn_horizon", "tuners");
    assert_has(r.out, "20", "tuners");
    cr_assert_null(strstr(r.out, "bandit_lr"), "tuners --tuner dqn lists bandit's options:\n%s", r.out);
    cli_run_free(&r);

    const char *db = tmp_path("opts.db");
    r = CLI("tune", "--final", "0", "--op", OP, "--tuner", "dqn", "--trials", "4", "--batch", BATCH_TEXT, "--db", db,
            "--tuner-opt", "dqn_horizon=3,dqn_reset=zeros", "--json");
    assert_ok(&r);
    cli_run_free(&r);
    const char *config = tmp_path("dqn.json");
    tmp_file_write_text(config, "{\"dqn_hidden\": 16, \"dqn_lr\": 0.0005, \"dqn_reset\": \"median\"}");
    r = CLI("tune", "--final", "0", "--op", OP, "--tuner", "dqn", "--trials", "4", "--batch", BATCH_TEXT, "--db", db,
            "--tuner-config", config, "--tuner-opt", "dqn_horizon=2", "--json");
    assert_ok(&r);
    cli_run_free(&r);

    EXPECT_USAGE_ERROR("dqn_horizon: 'abc'", "tune", "--op", OP, "--tuner", "dqn", "--db", db, "--tuner-opt",
                       "dqn_horizon=abc");
    EXPECT_USAGE_ERROR("dqn_horizon is an option of dqn, not of ga", "tune", "--op", OP, "--tuner", "ga", "--db",
                       db, "--tuner-opt", "dqn_horizon=5");
    EXPECT_USAGE_ERROR("unknown tuner option 'dqn_horizn'", "tune", "--op", OP, "--tuner", "dqn", "--db", db,
                       "--tuner-opt", "dqn_horizn=5");
    EXPECT_USAGE_ERROR("'dqn_horizon' is not NAME=VALUE", "tune", "--op", OP, "--tuner", "dqn", "--db", db,
                       "--tuner-opt", "dqn_horizon");
    EXPECT_USAGE_ERROR("dqn_reset: 'sideways'", "tune", "--op", OP, "--tuner", "dqn", "--db", db, "--tuner-opt",
                       "dqn_reset=sideways");
    tmp_file_write_text(config, "{\"dqn_gamma\": 0.9, \"bandit_lr\": 0.01}");
    EXPECT_USAGE_ERROR("dqn.json.bandit_lr: an option of bandit, not of dqn", "tune", "--op", OP, "--tuner", "dqn",
                       "--db", db, "--tuner-config", config);
    tmp_file_write_text(config, "[1, 2]");
    EXPECT_USAGE_ERROR("not a JSON object", "tune", "--op", OP, "--tuner", "dqn", "--db", db, "--tuner-config",
                       config);
    tmp_file_write_text(config, "{\"dqn_gamma\": [0.9]}");
    EXPECT_USAGE_ERROR("expected a number or a string", "tune", "--op", OP, "--tuner", "dqn", "--db", db,
                       "--tuner-config", config);
    EXPECT_USAGE_ERROR("--tuner-config", "tune", "--op", OP, "--tuner", "dqn", "--db", db, "--tuner-config",
                       tmp_path("absent.json"));
}

Test(cli_tune, an_agent_saved_on_one_workload_starts_the_next)
{
    const char *db = tmp_path("agent.db");
    char agent[320];
    snprintf(agent, sizeof agent, "%s", tmp_path("dqn.rla"));
    cli_run r = CLI("tune", "--final", "0", "--op", OP, "--tuner", "dqn", "--trials", "8", "--batch", BATCH_TEXT, "--db", db,
                    "--agent-out", agent, "--json");
    assert_ok(&r);
    cJSON *o = json_parse_object(r.out);
    cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "agent_out")->valuestring, agent);
    cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "agent_in")));
    cJSON_Delete(o);
    cli_run_free(&r);
    struct stat st;
    cr_assert_eq(stat(agent, &st), 0, "no agent file");

    /* another shape of the same op kind, reading and rewriting the agent */
    r = CLI("tune", "--final", "0", "--op", OP2, "--tuner", "dqn", "--trials", "8", "--batch", BATCH_TEXT, "--db", db, "--agent-in",
            agent, "--agent-out", agent, "--json");
    assert_ok(&r);
    o = json_parse_object(r.out);
    cr_assert_eq(json_number_at(o, "trials"), 8);
    cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "agent_in")->valuestring, agent);
    cJSON_Delete(o);
    cli_run_free(&r);

    EXPECT_USAGE_ERROR("holds a dqn agent, not a bandit one", "tune", "--op", OP, "--tuner", "bandit", "--db", db,
                       "--agent-in", agent);
    EXPECT_USAGE_ERROR("no agent", "tune", "--op", OP, "--tuner", "random", "--db", db, "--agent-out",
                       tmp_path("random.rla"));
    EXPECT_USAGE_ERROR("knob", "tune", "--op", "conv2d:N=1,C=4,H=6,W=6,K=4,R=3,S=3", "--tuner", "dqn", "--db", db,
                       "--agent-in", agent);
    const char *junk = tmp_path("junk.rla");
    tmp_file_write_text(junk, "not an agent");
    EXPECT_USAGE_ERROR("not an rltune agent file", "tune", "--op", OP, "--tuner", "dqn", "--db", db, "--agent-in",
                       junk);
    cr_assert_eq(stat(tmp_path("random.rla"), &st), -1, "a refused run wrote an agent");
}

Test(cli_tune, the_executor_is_local_or_mpi_and_mpi_needs_its_job)
{
    const char *db = tmp_path("executor.db");
    EXPECT_USAGE_ERROR("unknown executor 'ssh'", "tune", "--op", OP, "--db", db, "--executor", "ssh");
    EXPECT_USAGE_ERROR("--executor cannot be combined with --measure replay", "tune", "--op", OP, "--measure",
                       "replay:none.db", "--executor", "local");
    cli_run r = CLI("tune", "--final", "0", "--op", OP, "--trials", "2", "--batch", "2", "--db", db, "--executor",
                    "local", "--json");
    assert_ok(&r);
    cli_run_free(&r);
#if !RLTUNE_WITH_MPI
    /* a build without MPI says so, whatever the command */
    EXPECT_USAGE_ERROR("built without MPI", "tune", "--op", OP, "--db", db, "--executor", "mpi");
    EXPECT_USAGE_ERROR("built without MPI", "dataset", "--op", OP, "--out", db, "--executor=mpi");
#endif
    cr_assert_eq(access(db, F_OK), 0);
}
