/*
 * builder.c - compiles generated kernels into shared objects.
 *
 * Entry points: rlt_build_batch, rlt_build_batch_cc, rlt_build_describe.
 *
 * rlt_build_batch looks every kernel up in the compile cache, groups the rest
 * into translation units (the preamble, then up to max_per_unit kernels;
 * kernels for different compilers, and OpenMP and plain kernels, never share
 * a unit; units are balanced by source size, at least one per compiler
 * process while there are kernels to spread) and runs the compiler on each
 * unit, heaviest first: n_parallel processes at once, each in its own process group so that a timeout kills the driver and
 * everything it started (cc1, as, ld), each with stdout and stderr captured.
 * A unit that fails or times out is retried one kernel at a time, so only the
 * bad kernels get BUILD_ERROR / BUILD_TIMEOUT. Everything started is reaped
 * before returning, on every path.
 *
 * Cache layout (cache_dir):
 *   <key>.c, <key>.so      a translation unit and its shared object; key = a
 *                          hash of the compiler's identity, the command, the
 *                          CPU (flags such as -march=native depend on it) and
 *                          the unit's source
 *   index/<symbol>.<cmd>   the name of the .so that holds kernel <symbol>
 *                          compiled by command hash <cmd>: a kernel compiled
 *                          in any earlier unit is not compiled again (symbols
 *                          are derived from the kernel's code)
 * Every file is written under a temporary name and renamed into place, so
 * processes sharing a cache never see a half-written file. Bump
 * BUILD_CACHE_VERSION when the layout or key changes.
 */
#include "measure/measure.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define BUILD_CACHE_VERSION "rltune-build-cache-1"

enum {
    BUILD_MAX_WORDS = 128,         /* words of the compiler command, flags included */
    BUILD_OUTPUT_CAP = 64 * 1024,  /* compiler output kept per process */
    BUILD_POLL_MS = 100,           /* longest sleep between looks at running compilers */
    BUILD_MAX_PARALLEL = 256,
};

static const char *const build_fixed_flags[] = {"-std=gnu11", "-fPIC", "-shared"};

/* Options resolved once per batch. */
typedef struct build_cfg {
    char words[8192];                       /* cc and cflags split into words, NUL-separated */
    char *argv[BUILD_MAX_WORDS + 4];        /* cc, cflags, fixed flags (no -fopenmp / -o / source) */
    int n_argv;
    char cache_dir[PATH_MAX];
    char index_dir[PATH_MAX];
    double timeout_s;
    int n_parallel;
    int max_per_unit;
    uint64_t cmd_hash[2];                   /* indexed by needs_openmp */
} build_cfg;

/* One compiler run: a unit of kernels, or one kernel retried alone. */
typedef struct build_job {
    const struct build_cfg *cfg; /* the compiler command of every kernel in it */
    int first, n_kernels; /* order[first .. first + n_kernels - 1] */
    bool needs_openmp;
    pid_t pid;            /* > 0 while the compiler runs */
    int fd;               /* read end of the compiler's stdout + stderr, -1 when closed */
    bool saw_eof;
    uint64_t start_ns;
    rlt_str output;
    size_t output_dropped;
    char key[17];
} build_job;

typedef struct build_ctx {
    const build_cfg *cfgs; /* one per distinct compiler in the batch; cfgs[0] has the shared settings */
    const rlt_kernel_src *kernels;
    rlt_build_result *results;
    bool *is_done;  /* results[i] final */
    int *order;     /* kernels to compile, each unit's kernels together */
    build_job *jobs;
    int n_jobs, cap_jobs;
} build_ctx;

/* snprintf for buffers whose size was checked beforehand (cache paths leave
 * room, see resolve_cache_dir) or where cutting is fine (logs). */
static void format_into(char *buf, size_t cap, const char *fmt, ...) RLT_PRINTF(3, 4);

static void format_into(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
}

/* ---- command line ------------------------------------------------------- */

static const char *resolve_cc(const rlt_build_opts *opts)
{
    if (opts && opts->cc && opts->cc[0]) return opts->cc;
    const char *env = getenv("RLTUNE_CC");
    if (env && env[0]) return env;
    return "gcc";
}

static const char *resolve_cflags(const rlt_build_opts *opts)
{
    return opts && opts->cflags ? opts->cflags : RLT_DEFAULT_CFLAGS;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* The next white-space separated word at *p (its length in *n), moving
 * *p past it; NULL when there is none. */
static const char *next_word(const char **p, size_t *n)
{
    while (is_space(**p)) (*p)++;
    const char *word = *p;
    *n = 0;
    while (word[*n] && !is_space(word[*n])) (*n)++;
    *p += *n;
    return *n ? word : NULL;
}

/* Appends the words of `text` to `out`, each preceded by one space when
 * `out` is not empty. */
static void append_words(rlt_str *out, const char *text)
{
    size_t n;
    for (const char *word; (word = next_word(&text, &n));) {
        if (out->len > 0) rlt_str_append(out, " ");
        rlt_str_appendn(out, word, n);
    }
}

void rlt_build_describe(const rlt_build_opts *opts, bool needs_openmp, rlt_str *out)
{
    rlt_str s;
    rlt_str_init(&s);
    append_words(&s, resolve_cc(opts));
    append_words(&s, resolve_cflags(opts));
    for (size_t i = 0; i < RLT_ARRAY_LEN(build_fixed_flags); i++) append_words(&s, build_fixed_flags[i]);
    if (needs_openmp) append_words(&s, "-fopenmp");
    if (out->len > 0 && s.len > 0) rlt_str_append(out, " ");
    if (s.data) rlt_str_appendn(out, s.data, s.len);
    if (s.has_failed) out->has_failed = true;
    rlt_str_free(&s);
}

/* Splits `text` on white space into cfg->words / cfg->argv. */
static rlt_status split_into_argv(build_cfg *cfg, size_t *used, const char *text, const char *what,
                                  rlt_diag *diag)
{
    const char *p = text, *word;
    size_t n;
    while ((word = next_word(&p, &n))) {
        if (cfg->n_argv >= BUILD_MAX_WORDS)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "the compiler command has too many words (at most %d with its flags): %s '%s'",
                            BUILD_MAX_WORDS, what, text);
        if (*used + n + 1 > sizeof cfg->words)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "the compiler command is too long (at most %zu characters): %s '%.60s...'",
                            sizeof cfg->words - 1, what, text);
        char *copy = cfg->words + *used;
        memcpy(copy, word, n);
        copy[n] = '\0';
        *used += n + 1;
        cfg->argv[cfg->n_argv++] = copy;
    }
    return RLT_STATUS_OK;
}

/* Size and time stamp of the compiler's executable, so that upgrading the
 * compiler invalidates the cache. A compiler not found changes nothing here:
 * starting it will report the problem. */
static uint64_t hash_compiler_identity(uint64_t h, const char *cc)
{
    struct stat st;
    bool is_found = false;
    if (strchr(cc, '/')) {
        is_found = stat(cc, &st) == 0;
    } else {
        const char *p = getenv("PATH");
        if (!p) p = "/usr/local/bin:/usr/bin:/bin";
        while (!is_found) {
            size_t n = strcspn(p, ":");
            char path[PATH_MAX];
            int len = n ? snprintf(path, sizeof path, "%.*s/%s", (int)n, p, cc)
                        : snprintf(path, sizeof path, "./%s", cc);
            if (len > 0 && (size_t)len < sizeof path && stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
                access(path, X_OK) == 0)
                is_found = true;
            if (!p[n]) break;
            p += n + 1;
        }
    }
    if (!is_found) return h;
    int64_t id[3] = {(int64_t)st.st_size, (int64_t)st.st_mtim.tv_sec, (int64_t)st.st_mtim.tv_nsec};
    return rlt_hash_bytes(h, id, sizeof id);
}

static rlt_status resolve_cache_dir(const rlt_build_opts *opts, char *out, rlt_diag *diag)
{
    const char *env;
    int len;
    if (opts->cache_dir && opts->cache_dir[0])
        len = snprintf(out, PATH_MAX, "%s", opts->cache_dir);
    else if ((env = getenv("RLTUNE_CACHE_DIR")) && env[0])
        len = snprintf(out, PATH_MAX, "%s", env);
    else if ((env = getenv("XDG_CACHE_HOME")) && env[0])
        len = snprintf(out, PATH_MAX, "%s/rltune", env);
    else if ((env = getenv("HOME")) && env[0])
        len = snprintf(out, PATH_MAX, "%s/.cache/rltune", env);
    else
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "no directory for the compile cache: set RLTUNE_CACHE_DIR (or HOME)");
    /* Room for "/<16 hex>.so.tmp.<pid>.<job>" and "/index/<symbol>.<16 hex>". */
    if (len < 0 || len + 160 >= PATH_MAX)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "compile cache directory path too long: '%.200s'",
                        out);
    return RLT_STATUS_OK;
}

/* Resolves `opts` with compiler command `cc` (NULL: the one opts names). */
static rlt_status cfg_init(build_cfg *cfg, const rlt_build_opts *opts, const char *cc, rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    rlt_str cmd;
    rlt_str_init(&cmd);

    if (opts->timeout_s < 0 || opts->n_parallel < 0 || opts->max_per_unit < 0 ||
        opts->n_parallel > BUILD_MAX_PARALLEL) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "build options out of range: timeout_s %g (>= 0, 0 = 60), n_parallel %d "
                      "(0..%d, 0 = 2), max_per_unit %d (>= 0, 0 = 8)",
                      opts->timeout_s, opts->n_parallel, BUILD_MAX_PARALLEL, opts->max_per_unit);
        goto cleanup;
    }
    cfg->timeout_s = opts->timeout_s > 0 ? opts->timeout_s : 60.0;
    cfg->n_parallel = opts->n_parallel > 0 ? opts->n_parallel : 2;
    cfg->max_per_unit = opts->max_per_unit > 0 ? opts->max_per_unit : 8;

    size_t used = 0;
    rlt_build_opts with_cc = *opts;
    if (cc) with_cc.cc = cc;
    cc = resolve_cc(&with_cc);
    st = split_into_argv(cfg, &used, cc, "compiler", diag);
    if (st != RLT_STATUS_OK) goto cleanup;
    if (cfg->n_argv == 0) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "the compiler command is empty");
        goto cleanup;
    }
    st = split_into_argv(cfg, &used, resolve_cflags(opts), "flags", diag);
    if (st != RLT_STATUS_OK) goto cleanup;
    for (size_t i = 0; i < RLT_ARRAY_LEN(build_fixed_flags); i++)
        cfg->argv[cfg->n_argv++] = (char *)build_fixed_flags[i];

    st = resolve_cache_dir(opts, cfg->cache_dir, diag);
    if (st != RLT_STATUS_OK) goto cleanup;
    format_into(cfg->index_dir, sizeof cfg->index_dir, "%s/index", cfg->cache_dir);
    st = rlt_mkdir_p(cfg->index_dir, diag);
    if (st != RLT_STATUS_OK) {
        rlt_diag_prefix(diag, "compile cache");
        goto cleanup;
    }

    rlt_target target;
    rlt_target_detect(&target);
    for (int omp = 0; omp < 2; omp++) {
        rlt_str_clear(&cmd);
        rlt_build_describe(&with_cc, omp != 0, &cmd);
        if (cmd.has_failed) {
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory describing the compiler command");
            goto cleanup;
        }
        uint64_t h = rlt_hash_str(RLT_HASH_SEED, BUILD_CACHE_VERSION);
        h = rlt_hash_str(h, cmd.data);
        h = hash_compiler_identity(h, cfg->argv[0]);
        h = rlt_hash_str(h, target.cpu_model);
        int32_t features[2] = {target.vector_floats, target.has_fma};
        cfg->cmd_hash[omp] = rlt_hash_bytes(h, features, sizeof features);
    }

cleanup:
    rlt_str_free(&cmd);
    return st;
}

/* ---- cache -------------------------------------------------------------- */

static bool symbol_is_valid(const char *s)
{
    size_t n = strnlen(s, RLT_SYMBOL_MAX);
    if (n == 0 || n >= RLT_SYMBOL_MAX || !(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z') ||
                                           (s[0] >= 'A' && s[0] <= 'Z')))
        return false;
    for (size_t i = 1; i < n; i++) {
        char c = s[i];
        if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
            return false;
    }
    return true;
}

static void index_path(const build_cfg *cfg, const char *symbol, bool needs_openmp, char *out)
{
    format_into(out, PATH_MAX, "%s/%s.%016" PRIx64, cfg->index_dir, symbol, cfg->cmd_hash[needs_openmp]);
}

/* True when the index names an existing shared object holding `symbol`. */
static bool index_lookup(const build_cfg *cfg, const char *symbol, bool needs_openmp, char *so_path)
{
    char path[PATH_MAX];
    index_path(cfg, symbol, needs_openmp, path);
    char *text = NULL;
    if (rlt_file_read(path, &text, NULL, NULL) != RLT_STATUS_OK) return false;
    size_t n = strcspn(text, "\n");
    text[n] = '\0';
    bool is_found = n > 0 && n < 64 && !strchr(text, '/') &&
                    snprintf(so_path, PATH_MAX, "%s/%s", cfg->cache_dir, text) < PATH_MAX &&
                    access(so_path, R_OK) == 0;
    rlt_free(text);
    return is_found;
}

static void index_record(const build_cfg *cfg, const char *symbol, bool needs_openmp, const char *key)
{
    char path[PATH_MAX], line[40];
    index_path(cfg, symbol, needs_openmp, path);
    int n = snprintf(line, sizeof line, "%s.so\n", key);
    rlt_diag d = {0};
    /* A missing index entry only costs a recompile later: warn, go on. */
    if (rlt_file_write(path, line, (size_t)n, &d) != RLT_STATUS_OK)
        rlt_log(RLT_LOG_WARN, "compile cache index: %s", d.message);
}

static void unit_path(const build_cfg *cfg, const char *key, const char *suffix, char *out)
{
    format_into(out, PATH_MAX, "%s/%s%s", cfg->cache_dir, key, suffix);
}

static void tmp_so_path(const build_cfg *cfg, const char *key, int job, char *out)
{
    format_into(out, PATH_MAX, "%s/%s.so.tmp.%ld.%d", cfg->cache_dir, key, (long)getpid(), job);
}

/* ---- jobs --------------------------------------------------------------- */

static void mark_built(build_ctx *ctx, int k, const char *so_path, double build_s, bool was_cached)
{
    rlt_build_result *r = &ctx->results[k];
    r->status = RLT_STATUS_OK;
    snprintf(r->so_path, sizeof r->so_path, "%s", so_path);
    r->build_s = build_s;
    r->was_cached = was_cached;
    r->log[0] = '\0';
    ctx->is_done[k] = true;
}

static void job_succeed(build_ctx *ctx, const build_job *job, const char *so_path, double build_s,
                        bool was_cached)
{
    for (int i = 0; i < job->n_kernels; i++) {
        int k = ctx->order[job->first + i];
        mark_built(ctx, k, so_path, build_s, was_cached);
        index_record(job->cfg, ctx->kernels[k].symbol, job->needs_openmp, job->key);
    }
}

static void job_add(build_ctx *ctx, const build_cfg *cfg, int first, int n_kernels, bool needs_openmp)
{
    /* Capacity is units + kernels: each kernel is retried alone at most once. */
    RLT_ASSERT(ctx->n_jobs < ctx->cap_jobs);
    build_job *job = &ctx->jobs[ctx->n_jobs++];
    *job = (build_job){.cfg = cfg, .first = first, .n_kernels = n_kernels, .needs_openmp = needs_openmp, .fd = -1};
    rlt_str_init(&job->output);
}

/* Starts job j. A unit already in the cache completes at once (pid stays 0);
 * otherwise its source is written to the cache and the compiler spawned.
 * Non-OK only when the builder cannot work (cache not writable, compiler
 * cannot be started). */
static rlt_status job_start(build_ctx *ctx, int j, rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    build_job *job = &ctx->jobs[j];
    const build_cfg *cfg = job->cfg;
    rlt_str src;
    rlt_str_init(&src);
    int fds[2] = {-1, -1};
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    bool has_actions = false, has_attr = false;

    rlt_str_append(&src, rlt_codegen_preamble());
    rlt_str_append(&src, "\n");
    for (int i = 0; i < job->n_kernels; i++) {
        rlt_str_append(&src, ctx->kernels[ctx->order[job->first + i]].code);
        rlt_str_append(&src, "\n");
    }
    if (src.has_failed) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory assembling a translation unit");
        goto cleanup;
    }
    uint64_t key = rlt_hash_bytes(cfg->cmd_hash[job->needs_openmp], src.data, src.len);
    snprintf(job->key, sizeof job->key, "%016" PRIx64, key);

    char so_path[PATH_MAX], src_path[PATH_MAX], tmp_path[PATH_MAX];
    unit_path(cfg, job->key, ".so", so_path);
    unit_path(cfg, job->key, ".c", src_path);
    tmp_so_path(cfg, job->key, j, tmp_path);
    if (access(so_path, R_OK) == 0) {
        job_succeed(ctx, job, so_path, 0.0, true);
        goto cleanup;
    }
    st = rlt_file_write(src_path, src.data, src.len, diag);
    if (st != RLT_STATUS_OK) {
        rlt_diag_prefix(diag, "compile cache");
        goto cleanup;
    }

    char *argv[BUILD_MAX_WORDS + 16];
    int argc = 0;
    for (int i = 0; i < cfg->n_argv; i++) argv[argc++] = cfg->argv[i];
    if (job->needs_openmp) argv[argc++] = "-fopenmp";
    argv[argc++] = "-o";
    argv[argc++] = tmp_path;
    argv[argc++] = src_path;
    argv[argc] = NULL;

    if (pipe2(fds, O_CLOEXEC) != 0) {
        st = rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot create a pipe for the compiler: %s", strerror(errno));
        goto cleanup;
    }
    int e = posix_spawn_file_actions_init(&actions);
    has_actions = e == 0;
    if (e == 0) e = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    if (e == 0) e = posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    if (e == 0) e = posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
    if (e == 0) e = posix_spawnattr_init(&attr);
    has_attr = has_actions && e == 0;
    /* Own process group (so a timeout can kill cc1 and as too), default
     * signal handling and an empty mask whatever the caller set up. */
    sigset_t all, none;
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    sigemptyset(&none);
    if (e == 0) e = posix_spawnattr_setpgroup(&attr, 0);
    if (e == 0) e = posix_spawnattr_setsigdefault(&attr, &all);
    if (e == 0) e = posix_spawnattr_setsigmask(&attr, &none);
    if (e == 0)
        e = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    if (e != 0) {
        st = rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot set up the compiler process: %s", strerror(e));
        goto cleanup;
    }
    pid_t pid = 0;
    e = posix_spawnp(&pid, argv[0], &actions, &attr, argv, environ);
    if (e != 0) {
        st = rlt_fail(diag, RLT_STATUS_IO_ERROR,
                      "cannot run the compiler '%s': %s (choose one with the cc option or $RLTUNE_CC)",
                      argv[0], strerror(e));
        goto cleanup;
    }
    job->pid = pid;
    job->fd = fds[0];
    fds[0] = -1;
    fcntl(job->fd, F_SETFL, fcntl(job->fd, F_GETFL) | O_NONBLOCK);
    job->start_ns = rlt_time_ns();
    rlt_log(RLT_LOG_DEBUG, "compiling %d kernel(s) as %s.c (pid %ld)", job->n_kernels, job->key, (long)pid);

cleanup:
    if (has_attr) posix_spawnattr_destroy(&attr);
    if (has_actions) posix_spawn_file_actions_destroy(&actions);
    if (fds[0] >= 0) close(fds[0]);
    if (fds[1] >= 0) close(fds[1]);
    rlt_str_free(&src);
    return st;
}

/* Reads what the compiler has printed so far, keeping the first
 * BUILD_OUTPUT_CAP bytes (the first errors are the useful ones). */
static void job_drain(build_job *job)
{
    char buf[4096];
    while (job->fd >= 0) {
        ssize_t r = read(job->fd, buf, sizeof buf);
        if (r > 0) {
            size_t room = BUILD_OUTPUT_CAP > job->output.len ? BUILD_OUTPUT_CAP - job->output.len : 0;
            size_t keep = (size_t)r < room ? (size_t)r : room;
            rlt_str_appendn(&job->output, buf, keep);
            job->output_dropped += (size_t)r - keep;
        } else if (r == 0) {
            job->saw_eof = true;
            return;
        } else if (errno != EINTR) {
            return; /* EAGAIN: nothing more for now */
        }
    }
}

/* True once the compiler has exited (it stays a zombie until job_reap, so
 * its process group id cannot be reused before we kill the group). */
static bool job_has_exited(const build_job *job)
{
    siginfo_t info;
    memset(&info, 0, sizeof info);
    if (waitid(P_PID, (id_t)job->pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0)
        return errno != EINTR; /* ECHILD: someone else reaped it; job_reap reports that */
    return info.si_pid == job->pid;
}

/* Kills the compiler's process group (everything on timeout; stragglers
 * otherwise), collects the rest of its output and reaps it. Returns the wait
 * status, or -1 when the process could not be waited for. */
static int job_reap(build_job *job)
{
    kill(-job->pid, SIGKILL);
    job_drain(job);
    int wstatus = 0;
    pid_t r;
    do r = waitpid(job->pid, &wstatus, 0);
    while (r < 0 && errno == EINTR);
    close(job->fd);
    job->fd = -1;
    job->pid = 0;
    return r > 0 ? wstatus : -1;
}

/* The failure of a single-kernel job, as the kernel's log: what happened,
 * then the compiler's messages, cut to fit with a pointer to the source. */
static void job_fail_kernel(build_ctx *ctx, const build_job *job, int wstatus, bool timed_out, double build_s)
{
    int k = ctx->order[job->first];
    rlt_build_result *r = &ctx->results[k];
    char src_path[PATH_MAX];
    unit_path(job->cfg, job->key, ".c", src_path);

    rlt_str s;
    rlt_str_init(&s);
    if (timed_out)
        rlt_str_printf(&s, "the compiler ran past the %g s timeout and was killed\n", job->cfg->timeout_s);
    else if (wstatus == -1)
        rlt_str_printf(&s, "the compiler's exit status was lost (is SIGCHLD ignored?)\n");
    else if (WIFSIGNALED(wstatus))
        rlt_str_printf(&s, "the compiler was killed by signal %d (%s)\n", WTERMSIG(wstatus),
                       strsignal(WTERMSIG(wstatus)));
    else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)
        rlt_str_printf(&s, "the compiler exited with status 0 but wrote no shared object\n");
    else if (job->output.len == 0)
        rlt_str_printf(&s, "the compiler exited with status %d and printed nothing\n", WEXITSTATUS(wstatus));
    if (job->output.data) rlt_str_appendn(&s, job->output.data, job->output.len);

    r->status = timed_out ? RLT_STATUS_BUILD_TIMEOUT : RLT_STATUS_BUILD_ERROR;
    r->build_s = build_s;
    r->was_cached = false;
    r->so_path[0] = '\0';
    size_t more = job->output_dropped;
    if (s.has_failed || !s.data) {
        snprintf(r->log, sizeof r->log, "%s (compiler output lost: out of memory)", rlt_status_str(r->status));
    } else if (s.len + more < sizeof r->log) {
        memcpy(r->log, s.data, s.len + 1);
    } else {
        /* Keep whole lines from the start (the first errors matter most) and
         * say where the full source is. */
        size_t reserve = RLT_MIN(strlen(src_path) + 64, sizeof r->log / 2);
        size_t cut = RLT_MIN(sizeof r->log - 1 - reserve, s.len);
        while (cut > 0 && s.data[cut - 1] != '\n') cut--;
        format_into(r->log, sizeof r->log, "%.*s[... %zu more bytes; full source: %s]\n", (int)cut, s.data,
                 s.len + more - cut, src_path);
    }
    rlt_str_free(&s);
    ctx->is_done[k] = true;
}

/* Settles a reaped job: its kernels are built, retried one by one, or (for a
 * single kernel) failed with the compiler's messages. */
static void job_finish(build_ctx *ctx, int j, int wstatus, bool timed_out)
{
    build_job *job = &ctx->jobs[j];
    double build_s = (double)(rlt_time_ns() - job->start_ns) * 1e-9;
    char so_path[PATH_MAX], tmp_path[PATH_MAX];
    unit_path(job->cfg, job->key, ".so", so_path);
    tmp_so_path(job->cfg, job->key, j, tmp_path);

    bool is_ok = !timed_out && wstatus != -1 && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0 &&
                 rename(tmp_path, so_path) == 0;
    if (is_ok) {
        rlt_log(RLT_LOG_DEBUG, "compiled %s.so in %.2f s", job->key, build_s);
        job_succeed(ctx, job, so_path, build_s, false);
    } else {
        unlink(tmp_path);
        if (job->n_kernels > 1) {
            rlt_log(RLT_LOG_DEBUG, "unit %s.c failed (%s): compiling its %d kernels one by one", job->key,
                    timed_out ? "timeout" : "error", job->n_kernels);
            for (int i = 0; i < job->n_kernels; i++) job_add(ctx, job->cfg, job->first + i, 1, job->needs_openmp);
        } else {
            job_fail_kernel(ctx, job, wstatus, timed_out, build_s);
        }
    }
    rlt_str_free(&ctx->jobs[j].output);
}

/* Runs every job, at most n_parallel compilers at once. On failure (a
 * compiler that cannot start) it kills and reaps what still runs. */
static rlt_status run_jobs(build_ctx *ctx, rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    const build_cfg *cfg = &ctx->cfgs[0];
    uint64_t timeout_ns = (uint64_t)(cfg->timeout_s * 1e9);
    int *running = rlt_calloc((size_t)cfg->n_parallel, sizeof *running);
    struct pollfd *pfds = rlt_calloc((size_t)cfg->n_parallel, sizeof *pfds);
    int n_running = 0, next = 0;
    if (!running || !pfds) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory starting compilers");
        goto cleanup;
    }

    while (next < ctx->n_jobs || n_running > 0) {
        while (n_running < cfg->n_parallel && next < ctx->n_jobs) {
            int j = next++;
            st = job_start(ctx, j, diag);
            if (st != RLT_STATUS_OK) goto cleanup;
            if (ctx->jobs[j].pid > 0) running[n_running++] = j;
        }
        if (n_running == 0) continue;

        uint64_t now = rlt_time_ns();
        int wait_ms = BUILD_POLL_MS, n_pfds = 0;
        for (int r = 0; r < n_running; r++) {
            const build_job *job = &ctx->jobs[running[r]];
            /* Output closed but not yet exited: the process is on its way
             * out, look again very soon instead of spinning on POLLHUP. */
            if (job->saw_eof)
                wait_ms = RLT_MIN(wait_ms, 2);
            else
                pfds[n_pfds++] = (struct pollfd){.fd = job->fd, .events = POLLIN};
            uint64_t deadline = job->start_ns + timeout_ns;
            uint64_t ms_left = deadline > now ? (deadline - now + 999999) / 1000000 : 0;
            wait_ms = (int)RLT_MIN((uint64_t)wait_ms, ms_left);
        }
        if (poll(pfds, (nfds_t)n_pfds, wait_ms) < 0 && errno != EINTR) {
            st = rlt_fail(diag, RLT_STATUS_IO_ERROR, "waiting for the compiler: %s", strerror(errno));
            goto cleanup;
        }

        now = rlt_time_ns();
        for (int r = n_running - 1; r >= 0; r--) {
            int j = running[r];
            build_job *job = &ctx->jobs[j];
            job_drain(job);
            bool has_exited = job_has_exited(job);
            bool is_late = !has_exited && now >= job->start_ns + timeout_ns;
            if (!has_exited && !is_late) continue;
            int wstatus = job_reap(job);
            job_finish(ctx, j, wstatus, is_late);
            running[r] = running[--n_running];
        }
    }

cleanup:
    for (int r = 0; r < n_running; r++) {
        build_job *job = &ctx->jobs[running[r]];
        job_reap(job);
        rlt_str_free(&job->output);
    }
    rlt_free(pfds);
    rlt_free(running);
    return st;
}

/* ---- planning the units ------------------------------------------------ */

/* The expected cost of compiling a kernel, in bytes of source: the code, plus
 * a share of what every unit pays anyway (a process, the preamble, a link). */
static size_t kernel_weight(const rlt_kernel_src *k) { return strlen(k->code) + 4096; }

typedef struct build_unit {
    int group;      /* index into the batch's (compiler, OpenMP) groups */
    int n_kernels;
    size_t weight;
    int first;      /* into ctx->order, once laid out */
} build_unit;

static int unit_by_weight_desc(const void *a, const void *b)
{
    const build_unit *x = a, *y = b;
    if (x->weight != y->weight) return x->weight < y->weight ? 1 : -1;
    return x->group - y->group;
}

typedef struct weighted_kernel {
    int k;
    size_t weight;
} weighted_kernel;

static int kernel_by_weight_desc(const void *a, const void *b)
{
    const weighted_kernel *x = a, *y = b;
    if (x->weight != y->weight) return x->weight < y->weight ? 1 : -1;
    return x->k - y->k;
}

/* Splits the kernels to compile (pending[0..n), kernel k in group group_of[k])
 * into translation units and adds one job per unit, heaviest first. A group
 * gets ceil(size / max_per_unit) units, more while there are fewer units than
 * compiler processes, so that no process idles while another compiles
 * several units' worth; kernels go to units largest first, each to the
 * lightest unit with room (LPT). */
static rlt_status plan_units(build_ctx *ctx, int n_groups, const int *group_of, const int *pending, int n,
                             const build_cfg *const *cfg_of_group, const bool *openmp_of_group,
                             rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    const build_cfg *cfg = &ctx->cfgs[0];
    int *size = rlt_calloc((size_t)n_groups, sizeof *size);
    int *n_units = rlt_calloc((size_t)n_groups, sizeof *n_units);
    int *unit_base = rlt_calloc((size_t)n_groups + 1, sizeof *unit_base);
    weighted_kernel *wk = rlt_calloc((size_t)n + 1, sizeof *wk);
    build_unit *units = rlt_calloc((size_t)n + 1, sizeof *units);
    int *unit_of = rlt_calloc((size_t)n + 1, sizeof *unit_of);
    int *fill = rlt_calloc((size_t)n + 1, sizeof *fill);
    if (!size || !n_units || !unit_base || !wk || !units || !unit_of || !fill) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory planning the compile of %d kernels", n);
        goto cleanup;
    }
    for (int i = 0; i < n; i++) size[group_of[pending[i]]]++;
    int total = 0;
    for (int g = 0; g < n_groups; g++) {
        n_units[g] = (size[g] + cfg->max_per_unit - 1) / cfg->max_per_unit;
        total += n_units[g];
    }
    while (total < cfg->n_parallel) {
        int best = -1;
        for (int g = 0; g < n_groups; g++)
            if (n_units[g] < size[g] && (best < 0 || size[g] * n_units[best] > size[best] * n_units[g])) best = g;
        if (best < 0) break;
        n_units[best]++;
        total++;
    }
    for (int g = 0; g < n_groups; g++) unit_base[g + 1] = unit_base[g] + n_units[g];
    for (int g = 0; g < n_groups; g++)
        for (int u = unit_base[g]; u < unit_base[g + 1]; u++) units[u] = (build_unit){.group = g};

    for (int i = 0; i < n; i++) wk[i] = (weighted_kernel){pending[i], kernel_weight(&ctx->kernels[pending[i]])};
    qsort(wk, (size_t)n, sizeof *wk, kernel_by_weight_desc);
    for (int i = 0; i < n; i++) {
        int g = group_of[wk[i].k], pick = -1;
        for (int u = unit_base[g]; u < unit_base[g + 1]; u++)
            if (units[u].n_kernels < cfg->max_per_unit && (pick < 0 || units[u].weight < units[pick].weight))
                pick = u;
        RLT_ASSERT(pick >= 0);
        units[pick].n_kernels++;
        units[pick].weight += wk[i].weight;
        unit_of[i] = pick;
    }
    /* Lay the units out in ctx->order, then start the heaviest first. */
    int next = 0;
    for (int u = 0; u < total; u++) {
        units[u].first = next;
        next += units[u].n_kernels;
    }
    for (int i = 0; i < n; i++) ctx->order[units[unit_of[i]].first + fill[unit_of[i]]++] = wk[i].k;
    qsort(units, (size_t)total, sizeof *units, unit_by_weight_desc);
    for (int u = 0; u < total; u++)
        if (units[u].n_kernels > 0)
            job_add(ctx, cfg_of_group[units[u].group], units[u].first, units[u].n_kernels,
                    openmp_of_group[units[u].group]);

cleanup:
    rlt_free(fill);
    rlt_free(unit_of);
    rlt_free(units);
    rlt_free(wk);
    rlt_free(unit_base);
    rlt_free(n_units);
    rlt_free(size);
    return st;
}

/* ---- the batch ---------------------------------------------------------- */

rlt_status rlt_build_batch(const rlt_build_opts *opts, int n, const rlt_kernel_src *kernels,
                           rlt_build_result *results, rlt_diag *diag)
{
    return rlt_build_batch_cc(opts, n, kernels, NULL, results, diag);
}

rlt_status rlt_build_batch_cc(const rlt_build_opts *opts, int n, const rlt_kernel_src *kernels,
                              const char *const *cc_of, rlt_build_result *results, rlt_diag *diag)
{
    RLT_ASSERT(n >= 0 && (n == 0 || (kernels && results)));
    rlt_status st = RLT_STATUS_OK;
    rlt_diag local = {0};
    static const rlt_build_opts default_opts;
    if (!opts) opts = &default_opts;
    build_cfg *cfgs = NULL;
    build_ctx ctx = {0};
    int *first_of = NULL, *cfg_of = NULL, *group_of = NULL, *pending = NULL;
    const char **cc_names = NULL;
    const build_cfg **cfg_of_group = NULL;
    bool *openmp_of_group = NULL;
    int n_cfgs = 0;

    for (int i = 0; i < n; i++) {
        results[i] = (rlt_build_result){.status = RLT_STATUS_BUILD_ERROR};
        snprintf(results[i].symbol, sizeof results[i].symbol, "%s", kernels[i].symbol);
    }
    /* One configuration per distinct compiler (at least one, for the shared
     * settings even when the batch is empty). */
    size_t un = (size_t)n + 1;
    cfgs = rlt_calloc(un, sizeof *cfgs);
    cc_names = rlt_calloc(un, sizeof *cc_names);
    cfg_of = rlt_calloc(un, sizeof *cfg_of);
    group_of = rlt_calloc(un, sizeof *group_of);
    pending = rlt_calloc(un, sizeof *pending);
    cfg_of_group = rlt_calloc(2 * un, sizeof *cfg_of_group);
    openmp_of_group = rlt_calloc(2 * un, sizeof *openmp_of_group);
    first_of = rlt_calloc(un, sizeof *first_of);
    ctx.is_done = rlt_calloc(un, sizeof *ctx.is_done);
    ctx.order = rlt_calloc(un, sizeof *ctx.order);
    if (!cfgs || !cc_names || !cfg_of || !group_of || !pending || !cfg_of_group || !openmp_of_group ||
        !first_of || !ctx.is_done || !ctx.order) {
        st = rlt_fail(&local, RLT_STATUS_OUT_OF_MEMORY, "out of memory starting a build of %d kernels", n);
        goto cleanup;
    }
    cc_names[n_cfgs++] = NULL; /* opts' own compiler */
    for (int i = 0; i < n; i++) {
        const char *cc = cc_of ? cc_of[i] : NULL;
        int c = 0;
        while (c < n_cfgs && !(cc == cc_names[c] || (cc && cc_names[c] && strcmp(cc, cc_names[c]) == 0))) c++;
        if (c == n_cfgs) cc_names[n_cfgs++] = cc;
        cfg_of[i] = c;
    }
    for (int c = 0; c < n_cfgs; c++) {
        st = cfg_init(&cfgs[c], opts, cc_names[c], &local);
        if (st != RLT_STATUS_OK) goto cleanup;
    }
    ctx.cfgs = cfgs;
    ctx.kernels = kernels;
    ctx.results = results;
    for (int g = 0; g < 2 * n_cfgs; g++) {
        cfg_of_group[g] = &cfgs[g / 2];
        openmp_of_group[g] = g % 2 == 1;
    }

    /* Refuse malformed kernels, fold duplicates onto their first copy (they
     * would clash in one unit), take what the cache already holds. */
    int n_pending = 0;
    for (int i = 0; i < n; i++) {
        const rlt_kernel_src *k = &kernels[i];
        first_of[i] = i;
        group_of[i] = 2 * cfg_of[i] + (k->needs_openmp ? 1 : 0);
        if (!symbol_is_valid(k->symbol) || !k->code) {
            snprintf(results[i].log, sizeof results[i].log,
                     "invalid kernel: the symbol '%.*s' must be a C identifier of 1 to %d characters, "
                     "and the code present", RLT_SYMBOL_MAX - 1, k->symbol, RLT_SYMBOL_MAX - 1);
            ctx.is_done[i] = true;
            continue;
        }
        for (int p = 0; p < i; p++) {
            if (first_of[p] == p && group_of[p] == group_of[i] && symbol_is_valid(kernels[p].symbol) &&
                strcmp(kernels[p].symbol, k->symbol) == 0) {
                first_of[i] = p;
                break;
            }
        }
        if (first_of[i] != i) continue;
        char so_path[PATH_MAX];
        if (index_lookup(&cfgs[cfg_of[i]], k->symbol, k->needs_openmp, so_path)) {
            mark_built(&ctx, i, so_path, 0.0, true);
            continue;
        }
        pending[n_pending++] = i;
    }

    /* Capacity: every unit (at most one per pending kernel) and every kernel
     * retried alone once. */
    ctx.cap_jobs = 2 * n_pending;
    ctx.jobs = rlt_calloc((size_t)ctx.cap_jobs + 1, sizeof *ctx.jobs);
    if (!ctx.jobs) {
        st = rlt_fail(&local, RLT_STATUS_OUT_OF_MEMORY, "out of memory planning %d compiler runs", ctx.cap_jobs);
        goto cleanup;
    }
    st = plan_units(&ctx, 2 * n_cfgs, group_of, pending, n_pending, cfg_of_group, openmp_of_group, &local);
    if (st != RLT_STATUS_OK) goto cleanup;

    st = run_jobs(&ctx, &local);

cleanup:
    for (int j = 0; j < ctx.n_jobs; j++) rlt_str_free(&ctx.jobs[j].output);
    if (st != RLT_STATUS_OK) {
        for (int i = 0; i < n; i++) {
            if (ctx.is_done && ctx.is_done[i]) continue;
            results[i].status = RLT_STATUS_BUILD_ERROR;
            snprintf(results[i].log, sizeof results[i].log, "not built: %s", local.message);
        }
        rlt_fail(diag, st, "%s", local.message);
    }
    for (int i = 0; first_of && i < n; i++) {
        if (first_of[i] == i) continue;
        /* A duplicate shares its first copy's object; it cost no compile. */
        results[i] = results[first_of[i]];
        if (results[i].status == RLT_STATUS_OK) {
            results[i].was_cached = true;
            results[i].build_s = 0.0;
        }
    }
    rlt_free(ctx.jobs);
    rlt_free(ctx.order);
    rlt_free(ctx.is_done);
    rlt_free(first_of);
    rlt_free(openmp_of_group);
    rlt_free(cfg_of_group);
    rlt_free(pending);
    rlt_free(group_of);
    rlt_free(cfg_of);
    rlt_free(cc_names);
    rlt_free(cfgs);
    return st;
}
