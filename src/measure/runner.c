/*
 * runner.c - workloads (an op's inputs and reference output, shared with the
 * child processes that run kernels) and the runner that loads, checks and
 * times one built kernel.
 *
 * Entry points: rlt_workload_create, rlt_workload_destroy, rlt_workload_op,
 * rlt_run_kernel.
 *
 * Generated code never runs in the calling process. Each run forks a child
 * that makes the inputs and the reference read-only, pins itself, dlopens the
 * kernel, stages its weights once (SYMBOL_prepare, untimed: codegen.h),
 * checks one call against the reference (output pre-filled with NaN,
 * guard pages and canaries around output and workspace), warms up, times, and
 * checks the output once more; it sends one fixed-size message back over a
 * pipe. The parent waits with poll() and a deadline, kills the child on
 * timeout, names the signal of a crash (with what the crash handler saw, such
 * as a write to an input), and always reaps the child: thousands of runs leak
 * no process, descriptor or memory.
 */
#include "measure/measure.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The reference of a large op (a big convolution, scalar, in double) can take
 * minutes; it runs once per workload. */
#define RUN_REFERENCE_TIMEOUT_S 600.0
/* The child stops taking samples when the next one would end past this
 * fraction of timeout_s, so a slow but correct kernel is measured with fewer
 * samples instead of being killed. */
#define RUN_SAMPLING_BUDGET 0.8
#define RUN_NUMBER_MAX (1 << 30)
/* With a slow cutoff: the most calls after the checked one that may bring
 * a candidate's time under it (runner's kernel_child). */
#define RUN_CUTOFF_CALLS 4
#define RUN_CANARY 0xA5

struct rlt_workload {
    const rlt_op *op;                 /* borrowed */
    int n_inputs;
    float *inputs[RLT_MAX_TENSORS];   /* MAP_SHARED: children see them, may not write them */
    size_t input_map_bytes[RLT_MAX_TENSORS];
    int64_t n_out;
    double *ref;                      /* reference output, then per-element magnitude: one */
    double *magnitude;                /* MAP_SHARED mapping the reference child writes into */
    size_t ref_map_bytes;
};

const rlt_op *rlt_workload_op(const rlt_workload *w) { return w->op; }

void rlt_run_result_set_message(rlt_run_result *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->message, sizeof r->message, fmt, ap);
    va_end(ap);
}

static const char *dl_error(void)
{
    const char *e = dlerror();
    return e ? e : "the symbol's address is NULL";
}

/* ---- child processes ---------------------------------------------------- */

typedef enum child_msg_kind {
    CHILD_MSG_RESULT = 1,     /* the run's outcome; the last message */
    CHILD_MSG_CRASH_NOTE = 2, /* from the crash handler: what the faulting access hit */
} child_msg_kind;

typedef struct child_msg {
    int kind;
    rlt_run_result result; /* RESULT: the outcome; CRASH_NOTE: message only */
} child_msg;

_Static_assert(sizeof(child_msg) <= PIPE_BUF, "a message must be one atomic pipe write");

typedef struct child_report {
    bool has_result;
    child_msg result;
    bool has_note;
    char note[sizeof ((rlt_run_result *)0)->message];
    bool timed_out;
    bool has_wstatus;
    int wstatus;
} child_report;

/* The body of a child: does its work and writes its messages to fd. */
typedef void (*child_body)(void *ctx, int fd);

static void write_msg(int fd, const child_msg *msg)
{
    ssize_t r;
    do r = write(fd, msg, sizeof *msg);
    while (r < 0 && errno == EINTR);
}

/* Memory the child's crash handler can name, and where it writes. File scope
 * because a signal handler reaches nothing else; set only in child processes
 * (each a fresh copy), never read by the parent. */
typedef struct crash_region {
    uintptr_t lo, hi;
    char what[96];
} crash_region;

static crash_region crash_regions[RLT_MAX_TENSORS + 8];
static int n_crash_regions;
static int crash_fd = -1;
static child_msg crash_note;

static void crash_region_add(const void *lo, size_t bytes, const char *fmt, ...) RLT_PRINTF(3, 4);

static void crash_region_add(const void *lo, size_t bytes, const char *fmt, ...)
{
    if (n_crash_regions >= (int)RLT_ARRAY_LEN(crash_regions)) return;
    crash_region *r = &crash_regions[n_crash_regions++];
    r->lo = (uintptr_t)lo;
    r->hi = r->lo + bytes;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->what, sizeof r->what, fmt, ap);
    va_end(ap);
}

/* Async-signal-safe: fixed buffers, write() and raise() only. */
static void crash_handler(int sig, siginfo_t *info, void *uctx)
{
    (void)uctx;
    uintptr_t addr = (uintptr_t)info->si_addr;
    const char *what = addr < 4096 ? "dereferenced a NULL pointer" : "accessed unmapped or protected memory";
    for (int i = 0; i < n_crash_regions; i++)
        if (addr >= crash_regions[i].lo && addr < crash_regions[i].hi) what = crash_regions[i].what;
    char *m = crash_note.result.message;
    size_t cap = sizeof crash_note.result.message, n = 0;
    for (const char *p = what; *p && n + 1 < cap; p++) m[n++] = *p;
    static const char at[] = " (address 0x";
    for (const char *p = at; *p && n + 1 < cap; p++) m[n++] = *p;
    for (int shift = 60; shift >= 0 && n + 1 < cap; shift -= 4) m[n++] = "0123456789abcdef"[(addr >> shift) & 15];
    if (n + 1 < cap) m[n++] = ')';
    m[n] = '\0';
    crash_note.kind = CHILD_MSG_CRASH_NOTE;
    if (crash_fd >= 0) write_msg(crash_fd, &crash_note);
    /* SA_RESETHAND restored the default action: the signal, pending until
     * we return, then ends the process with its usual status. */
    raise(sig);
}

static void crash_handler_install(int fd)
{
    static char alt_stack[64 * 1024]; /* a stack overflow must still find a stack */
    stack_t ss = {.ss_sp = alt_stack, .ss_size = sizeof alt_stack};
    sigaltstack(&ss, NULL);
    /* A fault below us within the stack's limit (and its guard gap) is the
     * stack running out. */
    char here;
    struct rlimit stack_limit;
    size_t limit = 8u << 20;
    if (getrlimit(RLIMIT_STACK, &stack_limit) == 0 && stack_limit.rlim_cur != RLIM_INFINITY &&
        stack_limit.rlim_cur < ((rlim_t)1 << 34))
        limit = (size_t)stack_limit.rlim_cur;
    size_t below = limit + (1u << 20);
    uintptr_t top = (uintptr_t)&here;
    if (top > below)
        crash_region_add((const void *)(top - below), below,
                         "overflowed the stack (deep recursion, or large local arrays)");
    crash_fd = fd;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = crash_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
}

/* Common set-up of every child: die with the parent, no core dumps, default
 * signal handling (the parent may have installed handlers, e.g. the
 * sanitizers'), nothing blocked. */
static void child_prepare(pid_t parent)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    /* Kernels crash on purpose here: no core files, no crash reporter. */
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    prctl(PR_SET_DUMPABLE, 0);
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS,
                               SIGPIPE, SIGXCPU, SIGTERM, SIGALRM, SIGHUP};
    for (size_t i = 0; i < RLT_ARRAY_LEN(sigs); i++) signal(sigs[i], SIG_DFL);
    /* Ctrl-C reaches the whole process group: the parent decides what it
     * means (stop after this batch), so the kernel in flight finishes and is
     * not recorded as killed by SIGINT. The parent's deadline and
     * PDEATHSIG still end the child. */
    signal(SIGINT, SIG_IGN);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Forks a child running `body`, reads its messages until a result, its exit
 * or the deadline, kills it if need be and reaps it. Non-OK only when no
 * child could be started (pipe or fork failed). */
static rlt_status child_run(child_body body, void *ctx, double timeout_s, child_report *rep, char *err,
                            size_t err_cap)
{
    memset(rep, 0, sizeof *rep);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        snprintf(err, err_cap, "cannot create a pipe for the runner: %s", strerror(errno));
        return RLT_STATUS_IO_ERROR;
    }
    uint64_t deadline = rlt_time_ns() + (uint64_t)(timeout_s * 1e9);
    pid_t parent = getpid();
    /* Whatever stdio holds would otherwise be written twice (by a child
     * that flushes it); children leave with _exit, so this is belt and braces. */
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, err_cap, "cannot fork a runner process: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return RLT_STATUS_IO_ERROR;
    }
    if (pid == 0) {
        close(fds[0]);
        child_prepare(parent);
        body(ctx, fds[1]);
        _exit(0);
    }
    close(fds[1]);

    unsigned char buf[sizeof(child_msg)];
    size_t have = 0;
    bool saw_eof = false;
    while (!rep->has_result && !saw_eof) {
        uint64_t now = rlt_time_ns();
        if (now >= deadline) {
            rep->timed_out = true;
            break;
        }
        uint64_t ms = (deadline - now + 999999) / 1000000;
        struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
        int ready = poll(&pfd, 1, ms > INT_MAX ? INT_MAX : (int)ms);
        if (ready <= 0) continue; /* timeout (checked above) or EINTR */
        ssize_t r = read(fds[0], buf + have, sizeof buf - have);
        if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) {
            saw_eof = true;
        } else if (r > 0 && (have += (size_t)r) == sizeof buf) {
            child_msg msg;
            memcpy(&msg, buf, sizeof msg);
            have = 0;
            if (msg.kind == CHILD_MSG_RESULT) {
                rep->has_result = true;
                rep->result = msg;
            } else if (msg.kind == CHILD_MSG_CRASH_NOTE && !rep->has_note) {
                rep->has_note = true;
                snprintf(rep->note, sizeof rep->note, "%s", msg.result.message);
            }
        }
    }
    close(fds[0]);

    /* After end of file the child is on its way out: give it until the
     * deadline. After a result it has nothing left to do, and after a
     * timeout it must go: kill it (a zombie ignores this harmlessly). */
    pid_t got = 0;
    int wstatus = 0;
    if (!rep->has_result && !rep->timed_out) {
        for (;;) {
            got = waitpid(pid, &wstatus, WNOHANG);
            if (got != 0 && !(got < 0 && errno == EINTR)) break;
            if (rlt_time_ns() >= deadline) {
                rep->timed_out = true;
                break;
            }
            nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
        }
    }
    if (got == 0) {
        kill(pid, SIGKILL);
        do got = waitpid(pid, &wstatus, 0);
        while (got < 0 && errno == EINTR);
    }
    rep->has_wstatus = got == pid;
    rep->wstatus = wstatus;
    return RLT_STATUS_OK;
}

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    case SIGQUIT: return "SIGQUIT";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGXCPU: return "SIGXCPU";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    default: return NULL;
    }
}

/* Turns a report without a result into a status and a message: a timeout,
 * a signal (named, with the crash handler's note), or an early exit. */
static rlt_status child_failure(const child_report *rep, const char *who, double timeout_s, char *msg,
                                size_t cap)
{
    if (rep->timed_out) {
        snprintf(msg, cap, "%s ran past the %g s timeout and was killed", who, timeout_s);
        return RLT_STATUS_RUN_TIMEOUT;
    }
    if (rep->has_wstatus && WIFSIGNALED(rep->wstatus)) {
        int sig = WTERMSIG(rep->wstatus);
        const char *name = signal_name(sig);
        char num[32];
        if (!name) {
            snprintf(num, sizeof num, "signal %d", sig);
            name = num;
        }
        snprintf(msg, cap, "%s crashed with %s (%s)%s%s%s", who, name, strsignal(sig),
                 sig == SIGKILL ? ", killed from outside (out of memory?)" : "", rep->has_note ? ": " : "",
                 rep->has_note ? rep->note : "");
        return RLT_STATUS_RUN_ERROR;
    }
    if (rep->has_wstatus && WIFEXITED(rep->wstatus)) {
        snprintf(msg, cap, "%s exited with status %d before reporting (did it call exit?)", who,
                 WEXITSTATUS(rep->wstatus));
        return RLT_STATUS_RUN_ERROR;
    }
    snprintf(msg, cap, "%s ended and its exit status was lost (is SIGCHLD ignored?)", who);
    return RLT_STATUS_RUN_ERROR;
}

/* ---- memory for the child ----------------------------------------------- */

/* A 64-byte aligned buffer whose end is within 64 bytes of an inaccessible
 * page, with one more such page before it: running off either end by much
 * faults at once, and the bytes between the guards and the data hold
 * canaries that catch small overruns. */
typedef struct guarded_buf {
    unsigned char *map;
    size_t map_bytes, page_bytes, body_bytes;
    unsigned char *data;
    size_t bytes;
    size_t slack_before, slack_after; /* canary bytes */
} guarded_buf;

static bool guarded_alloc(size_t bytes, guarded_buf *b)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t padded = ((bytes ? bytes : 1) + 63) & ~(size_t)63;
    size_t body = (padded + page - 1) / page * page;
    if (padded < bytes || body < padded || body > SIZE_MAX - 2 * page) return false;
    unsigned char *map = mmap(NULL, body + 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) return false;
    if (mprotect(map, page, PROT_NONE) != 0 || mprotect(map + page + body, page, PROT_NONE) != 0) {
        munmap(map, body + 2 * page);
        return false;
    }
    *b = (guarded_buf){.map = map, .map_bytes = body + 2 * page, .page_bytes = page, .body_bytes = body,
                       .data = map + page + body - padded, .bytes = bytes, .slack_before = body - padded,
                       .slack_after = padded - bytes};
    memset(map + page, RUN_CANARY, b->slack_before);
    memset(b->data + bytes, RUN_CANARY, b->slack_after);
    return true;
}

/* How far outside the data the farthest overwritten canary byte lies:
 * *before > 0 bytes before the start, *after > 0 bytes past the end. */
static bool guarded_canary_hit(const guarded_buf *b, size_t *before, size_t *after)
{
    *before = *after = 0;
    for (size_t i = b->slack_before; i > 0 && !*before; i--)
        if (b->data[-(ptrdiff_t)i] != RUN_CANARY) *before = i;
    for (size_t i = b->slack_after; i > 0 && !*after; i--)
        if (b->data[b->bytes + i - 1] != RUN_CANARY) *after = i;
    return *before || *after;
}

static void guarded_name(const guarded_buf *b, const char *what, const char *name)
{
    crash_region_add(b->map, b->page_bytes, "accessed memory before the start of %s%s", what, name);
    crash_region_add(b->map + b->page_bytes + b->body_bytes, b->page_bytes, "accessed memory past the end of %s%s",
                     what, name);
}

/* Makes the workload read-only in this (child) process and names it for the
 * crash handler. The mappings are shared: a write here would reach the
 * parent and every later run. */
static bool protect_workload(const rlt_workload *w, bool protect_reference, char *msg, size_t cap)
{
    for (int t = 0; t < w->n_inputs; t++) {
        if (mprotect(w->inputs[t], w->input_map_bytes[t], PROT_READ) != 0) {
            snprintf(msg, cap, "cannot make input %s read-only: %s", w->op->tensors[t].name, strerror(errno));
            return false;
        }
        crash_region_add(w->inputs[t], w->input_map_bytes[t], "wrote to input tensor %s, which is read-only",
                         w->op->tensors[t].name);
    }
    if (protect_reference) {
        if (mprotect(w->ref, w->ref_map_bytes, PROT_READ) != 0) {
            snprintf(msg, cap, "cannot make the reference read-only: %s", strerror(errno));
            return false;
        }
        crash_region_add(w->ref, w->ref_map_bytes, "wrote to the runner's reference output");
    }
    return true;
}

/* ---- checking ----------------------------------------------------------- */

/* "C[3,5]" for flat element e of the op's output. */
static void format_output_index(const rlt_op *op, int64_t e, char *buf, size_t cap)
{
    const rlt_tensor *t = &op->tensors[op->n_tensors - 1];
    int64_t idx[RLT_MAX_DIMS];
    for (int d = t->n_dims - 1; d >= 0; d--) {
        idx[d] = t->dims[d] > 0 ? e % t->dims[d] : 0;
        e = t->dims[d] > 0 ? e / t->dims[d] : 0;
    }
    size_t n = (size_t)snprintf(buf, cap, "%s[", t->name);
    for (int d = 0; d < t->n_dims && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%" PRId64, d ? "," : "", idx[d]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
}

/* Compares every output element with the reference; on a mismatch sets
 * WRONG_ANSWER and names the first bad element. `when` prefixes the message. */
static bool check_output(const rlt_workload *w, const float *out, const char *when, rlt_run_result *r)
{
    const rlt_op *op = w->op;
    double scale = RLT_TOLERANCE_FACTOR * sqrt((double)rlt_op_reduce_size(op) + 1.0) * FLT_EPSILON;
    int64_t n_bad = 0, first = -1;
    double first_tol = 0.0, max_error = r->max_error;
    for (int64_t i = 0; i < w->n_out; i++) {
        double tol = scale * w->magnitude[i] + FLT_MIN;
        double v = out[i];
        double err = isfinite(v) ? fabs(v - w->ref[i]) : INFINITY;
        if (err / tol > max_error) max_error = err / tol;
        if (!(err <= tol) && n_bad++ == 0) {
            first = i;
            first_tol = tol;
        }
    }
    r->max_error = max_error;
    if (n_bad == 0) return true;
    char where[128], got[96];
    format_output_index(op, first, where, sizeof where);
    float v = out[first];
    if (isnan(v))
        snprintf(got, sizeof got, "NaN (never written, or computed as NaN)");
    else
        snprintf(got, sizeof got, "%.9g", (double)v);
    r->status = RLT_STATUS_WRONG_ANSWER;
    r->is_correct = false;
    rlt_run_result_set_message(r,
                "%swrong output %s (element %" PRId64 "): got %s, expected %.9g (tolerance %.3g); %" PRId64
                " of %" PRId64 " elements wrong",
                when, where, first, got, w->ref[first], first_tol, n_bad, w->n_out);
    return false;
}

/* Wrote outside its output or workspace: a memory error even where the
 * values came out right. */
static bool check_canaries(const guarded_buf *out, const guarded_buf *ws, const rlt_op *op, rlt_run_result *r)
{
    size_t before, after;
    if (guarded_canary_hit(out, &before, &after))
        rlt_run_result_set_message(r, "the kernel wrote up to %zu bytes %s the output %s", before ? before : after,
                    before ? "before the start of" : "past the end of", op->tensors[op->n_tensors - 1].name);
    else if (guarded_canary_hit(ws, &before, &after))
        rlt_run_result_set_message(r, "the kernel wrote up to %zu bytes %s its workspace of %zu bytes", before ? before : after,
                    before ? "before the start of" : "past the end of", ws->bytes);
    else
        return true;
    r->status = RLT_STATUS_RUN_ERROR;
    return false;
}

/* ---- the kernel's child ------------------------------------------------- */

typedef size_t (*workspace_fn)(void);
typedef void (*kernel_fn)(float *const *tensors, void *workspace, int n_threads);
typedef void (*reference_fn)(const float *const *inputs, double *out, double *out_magnitude);

typedef struct run_ctx {
    const rlt_workload *w;
    const rlt_build_result *build;
    int number, repeat, warmup, n_threads;
    double min_repeat_ms, timeout_s, slow_cutoff_ms;
    bool no_pin, cold_weights;
} run_ctx;

/* One thread: pin to the last allowed CPU (away from CPU 0, where interrupts
 * and the parent tend to run). More: let libgomp place the threads, which it
 * reads from the environment when the kernel's .so loads it. */
static void child_pin(const run_ctx *c)
{
    char n[16];
    snprintf(n, sizeof n, "%d", c->n_threads);
    setenv("OMP_NUM_THREADS", n, 1);
    /* If the parent had libgomp loaded already (a process that trains the
     * XGBoost cost model does), it read its settings at load time and the
     * variables set here come too late: set the thread count through the
     * API instead. Binding cannot be changed after libgomp starts. */
    void (*set_threads)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "omp_set_num_threads");
    if (set_threads) set_threads(c->n_threads);
    /* The wait policy and the binding reach only a libgomp that loads after
     * this (a parent without it). The rltune binaries link libgomp through
     * libxgboost, so there they keep what the parent's environment said
     * (bench/RESULTS.md, fifth round: on depthwise at 2 threads, an active
     * wait policy for the whole process made no measurable difference). */
    if (c->n_threads > 1) {
        setenv("OMP_WAIT_POLICY", "active", 1);
        if (!c->no_pin) {
            setenv("OMP_PROC_BIND", "close", 1);
            setenv("OMP_PLACES", "cores", 1);
        }
        return;
    }
    if (c->no_pin) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return;
    for (int cpu = CPU_SETSIZE - 1; cpu >= 0; cpu--) {
        if (!CPU_ISSET(cpu, &set)) continue;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        sched_setaffinity(0, sizeof set, &set);
        return;
    }
}

static double time_calls_ns(kernel_fn kernel, float *const *tensors, void *ws, int n_threads, int number)
{
    uint64_t start = rlt_time_ns();
    for (int i = 0; i < number; i++) kernel(tensors, ws, n_threads);
    return (double)(rlt_time_ns() - start);
}

/* What a cold call must find in memory, not in a cache, as a layer of a
 * network finds it: the op's weights and the workspace (their packed
 * stages, and scratch the network's own occurrence of the kernel last
 * touched a whole run ago), and the output, whose buffer the network last
 * wrote as long ago (a write to a line not in the caches reads it from
 * memory first). Not the other inputs: in a network the layer before has
 * just written them. */
typedef struct cold_set {
    const void *base[RLT_MAX_TENSORS + 1];
    size_t bytes[RLT_MAX_TENSORS + 1];
    int n;
} cold_set;

static void cold_set_add(cold_set *s, const void *base, size_t bytes)
{
    if (bytes == 0 || s->n >= (int)RLT_ARRAY_LEN(s->base)) return;
    s->base[s->n] = base;
    s->bytes[s->n] = bytes;
    s->n++;
}

/* Writes back and evicts every line of the set from every cache level
 * (clflush, ordered by mfence), or on a machine without it, overwrites a
 * buffer larger than the caches. Not timed. */
static void cold_set_evict(const cold_set *s, char *sweep, size_t sweep_bytes)
{
#if defined(__x86_64__) || defined(__i386__)
    (void)sweep, (void)sweep_bytes;
    for (int i = 0; i < s->n; i++) {
        const char *p = s->base[i], *end = p + s->bytes[i];
        for (p = (const char *)((uintptr_t)p & ~(uintptr_t)63); p < end; p += 64) __builtin_ia32_clflush(p);
    }
    __builtin_ia32_mfence();
#else
    (void)s;
    for (size_t i = 0; i < sweep_bytes; i += 64) sweep[i]++;
#endif
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nothing starts in the child that would end past this many nanoseconds
 * after its start (RUN_SAMPLING_BUDGET of the timeout). */
static double sampling_budget_ns(const run_ctx *c) { return c->timeout_s * RUN_SAMPLING_BUDGET * 1e9; }

/* Warms up, calibrates `number` (doubling at least, jumping to the estimate
 * when that is further) until one sample lasts min_repeat_ms, then takes
 * `repeat` samples of `number` calls. Nothing starts that would end past the
 * sampling budget: a slow kernel gets fewer samples (at worst the time of
 * its checked call, `first_ns`) rather than a timeout. Returns false when
 * out of memory. */
static bool time_kernel(const run_ctx *c, kernel_fn kernel, float *const *tensors, void *ws, const cold_set *cold,
                        uint64_t start_ns, double first_ns, rlt_run_result *r)
{
    double *samples = rlt_malloc((size_t)c->repeat * sizeof *samples);
    if (!samples) return false;
    double budget_ns = sampling_budget_ns(c);
    double min_ns = c->min_repeat_ms * 1e6;
#define RUN_FITS(calls) ((double)(rlt_time_ns() - start_ns) + per_call * (calls) <= budget_ns)
    double per_call = first_ns;
    for (int i = 0; i < c->warmup && RUN_FITS(1); i++) kernel(tensors, ws, c->n_threads);

    int n = 0, number = c->number, sampled_number = 0;
    if (cold) {
        /* One call a sample, each after its weights are evicted; the
         * eviction counts against the budget (per_call stays the first,
         * cold, call: an upper bound on both together). */
        size_t sweep_bytes = 0;
        char *sweep = NULL;
#if !defined(__x86_64__) && !defined(__i386__)
        sweep_bytes = (size_t)256 << 20;
        sweep = rlt_calloc(sweep_bytes, 1);
        if (!sweep) {
            rlt_free(samples);
            return false;
        }
#endif
        number = 1;
        per_call = RLT_MAX(per_call, 1.0);
        while (n < c->repeat && (n == 0 || RUN_FITS(2))) {
            cold_set_evict(cold, sweep, sweep_bytes);
            samples[n++] = time_calls_ns(kernel, tensors, ws, c->n_threads, 1);
        }
        rlt_free(sweep);
        goto done;
    }
    double sampled_per_call = 0.0;
    while (RUN_FITS(number)) {
        double t = time_calls_ns(kernel, tensors, ws, c->n_threads, number);
        per_call = RLT_MAX(t / number, 1.0);
        sampled_per_call = t / number;
        sampled_number = number;
        if (t >= min_ns || number >= RUN_NUMBER_MAX) {
            samples[n++] = sampled_per_call;
            break;
        }
        double next = RLT_MAX(2.0 * number, RLT_MIN(min_ns / per_call * 1.1, 1024.0 * number));
        number = (int)RLT_MIN(next, (double)RUN_NUMBER_MAX);
    }
    if (n == 0) {
        /* Out of time before a full-length sample: the best we have. */
        samples[n++] = sampled_number ? sampled_per_call : first_ns;
        number = sampled_number ? sampled_number : 1;
    }
    while (n < c->repeat && RUN_FITS(number)) {
        double t = time_calls_ns(kernel, tensors, ws, c->n_threads, number);
        samples[n++] = t / number;
    }
done:
#undef RUN_FITS

    qsort(samples, (size_t)n, sizeof *samples, compare_doubles);
    double median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
    r->time_min_ms = samples[0] * 1e-6;
    r->time_median_ms = median * 1e-6;
    r->gflops = median > 0 ? c->w->op->flops / median : 0.0; /* flops per ns = GFLOP/s */
    r->n_samples = n;
    r->number = number;
    if (n < c->repeat)
        rlt_run_result_set_message(r, "took %d of %d samples of %d call(s): more would not fit in the %g s timeout", n, c->repeat,
                    number, c->timeout_s);
    rlt_free(samples);
    return true;
}

static void kernel_child(void *arg, int fd)
{
    const run_ctx *c = arg;
    const rlt_workload *w = c->w;
    const rlt_op *op = w->op;
    uint64_t start_ns = rlt_time_ns();
    child_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.kind = CHILD_MSG_RESULT;
    rlt_run_result *r = &msg.result;
    r->status = RLT_STATUS_RUN_ERROR;
    guarded_buf out, ws;
    const char *so = c->build->so_path, *sym = c->build->symbol;

    child_pin(c);
    if (!protect_workload(w, true, r->message, sizeof r->message)) goto send;
    crash_handler_install(fd);

    if (!so[0]) {
        rlt_run_result_set_message(r, "the build result names no shared object");
        goto send;
    }
    void *lib = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        rlt_run_result_set_message(r, "cannot load the kernel: %s", dl_error());
        goto send;
    }
    kernel_fn kernel = (kernel_fn)dlsym(lib, sym);
    if (!kernel) {
        rlt_run_result_set_message(r, "cannot find the kernel '%s': %s", sym, dl_error());
        goto send;
    }
    char ws_sym[RLT_SYMBOL_MAX + 32];
    snprintf(ws_sym, sizeof ws_sym, "%s_workspace_bytes", sym);
    workspace_fn workspace_bytes = (workspace_fn)dlsym(lib, ws_sym);
    if (!workspace_bytes) {
        rlt_run_result_set_message(r, "cannot find '%s': %s", ws_sym, dl_error());
        goto send;
    }
    snprintf(ws_sym, sizeof ws_sym, "%s_prepare", sym);
    kernel_fn prepare = (kernel_fn)dlsym(lib, ws_sym); /* optional: kernels not from codegen may have none */
    size_t ws_bytes = workspace_bytes();
    if (!guarded_alloc((size_t)w->n_out * sizeof(float), &out) || !guarded_alloc(ws_bytes, &ws)) {
        rlt_run_result_set_message(r, "cannot allocate the output (%" PRId64 " floats) and a workspace of %zu bytes", w->n_out,
                    ws_bytes);
        goto send;
    }
    guarded_name(&out, "the output ", op->tensors[op->n_tensors - 1].name);
    guarded_name(&ws, "the workspace", "");
    float *out_data = (float *)out.data;
    /* NaN everywhere, so an element the kernel never writes is caught, and a
     * kernel that reads its workspace before writing it gets NaN too. */
    for (int64_t i = 0; i < w->n_out; i++) out_data[i] = NAN;
    memset(ws.data, 0xff, ws_bytes);
    float *tensors[RLT_MAX_TENSORS];
    for (int t = 0; t < w->n_inputs; t++) tensors[t] = w->inputs[t];
    tensors[w->n_inputs] = out_data;

    /* The weights' stages, once (codegen.h): never timed. */
    if (prepare) prepare(tensors, ws.data, c->n_threads);
    uint64_t first_start = rlt_time_ns();
    kernel(tensors, ws.data, c->n_threads);
    double first_ns = (double)(rlt_time_ns() - first_start);
    if (!check_canaries(&out, &ws, op, r) || !check_output(w, out_data, "", r)) goto send;
    if (c->slow_cutoff_ms > 0 && first_ns > c->slow_cutoff_ms * 1e6) {
        /* The checked call is cold, and at several threads it starts the
         * OpenMP threads: the next call or two of a 0.03 ms kernel at two
         * threads took 3 to 7 ms too (bench/RESULTS.md, eighth round). So
         * the cutoff goes by the fastest of a few more calls, which end as
         * soon as one is under it, or when the next would end past the
         * sampling budget (a slow kernel is timed, not killed). */
        double fastest_ns = first_ns;
        int n_calls = 1;
        while (n_calls <= RUN_CUTOFF_CALLS && fastest_ns > c->slow_cutoff_ms * 1e6 &&
               (double)(rlt_time_ns() - start_ns) + fastest_ns <= sampling_budget_ns(c)) {
            uint64_t t0 = rlt_time_ns();
            kernel(tensors, ws.data, c->n_threads);
            fastest_ns = RLT_MIN(fastest_ns, (double)(rlt_time_ns() - t0));
            n_calls++;
        }
        if (fastest_ns > c->slow_cutoff_ms * 1e6) {
            /* Clearly slower than what the caller already has: that is
             * its time. */
            r->time_min_ms = r->time_median_ms = fastest_ns * 1e-6;
            r->gflops = op->flops / fastest_ns;
            r->n_samples = 1;
            r->number = 1;
            rlt_run_result_set_message(r, "timed by the fastest of its first %d call(s): %.3f ms is slower than the "
                                          "cutoff of %.3f ms",
                                       n_calls, fastest_ns * 1e-6, c->slow_cutoff_ms);
            if (!check_canaries(&out, &ws, op, r) || !check_output(w, out_data, "after the later calls, ", r))
                goto send;
            r->status = RLT_STATUS_OK;
            r->is_correct = true;
            goto send;
        }
        first_ns = fastest_ns;
    }
    cold_set cold = {.n = 0};
    if (c->cold_weights) {
        for (int t = 0; t < w->n_inputs; t++)
            if (op->tensors[t].is_weight) cold_set_add(&cold, tensors[t], w->input_map_bytes[t]);
        cold_set_add(&cold, ws.data, ws_bytes);
        cold_set_add(&cold, out_data, (size_t)w->n_out * sizeof(float));
    }
    if (!time_kernel(c, kernel, tensors, ws.data, c->cold_weights ? &cold : NULL, start_ns, first_ns, r)) {
        rlt_run_result_set_message(r, "out of memory for %d timing samples", c->repeat);
        goto send;
    }
    /* Every call must give the same answer: a kernel that depends on what an
     * earlier call left in its workspace or output is wrong too. */
    if (!check_canaries(&out, &ws, op, r) || !check_output(w, out_data, "after the timed calls, ", r)) goto send;
    r->status = RLT_STATUS_OK;
    r->is_correct = true;

send:
    write_msg(fd, &msg);
}

/* ---- the reference's child ---------------------------------------------- */

typedef struct reference_ctx {
    const rlt_workload *w;
    const rlt_build_result *build;
} reference_ctx;

static void reference_child(void *arg, int fd)
{
    const reference_ctx *c = arg;
    const rlt_workload *w = c->w;
    child_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.kind = CHILD_MSG_RESULT;
    rlt_run_result *r = &msg.result;
    r->status = RLT_STATUS_RUN_ERROR;
    if (!protect_workload(w, false, r->message, sizeof r->message)) goto send;
    crash_handler_install(fd);
    void *lib = dlopen(c->build->so_path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        rlt_run_result_set_message(r, "cannot load the reference kernel: %s", dl_error());
        goto send;
    }
    reference_fn ref = (reference_fn)dlsym(lib, c->build->symbol);
    if (!ref) {
        rlt_run_result_set_message(r, "cannot find the reference kernel '%s': %s", c->build->symbol, dl_error());
        goto send;
    }
    const float *inputs[RLT_MAX_TENSORS];
    for (int t = 0; t < w->n_inputs; t++) inputs[t] = w->inputs[t];
    ref(inputs, w->ref, w->magnitude);
    r->status = RLT_STATUS_OK;
send:
    write_msg(fd, &msg);
}

/* ---- workload ----------------------------------------------------------- */

static void *map_shared(size_t bytes)
{
    void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void rlt_workload_destroy(rlt_workload *w)
{
    if (!w) return;
    for (int t = 0; t < w->n_inputs; t++)
        if (w->inputs[t]) munmap(w->inputs[t], w->input_map_bytes[t]);
    if (w->ref) munmap(w->ref, w->ref_map_bytes);
    rlt_free(w);
}

rlt_status rlt_workload_create(const rlt_op *op, const rlt_build_opts *opts, uint64_t seed, rlt_workload **out,
                               rlt_diag *diag)
{
    RLT_ASSERT(op && out);
    RLT_ASSERT(op->n_tensors >= 2 && op->n_tensors <= RLT_MAX_TENSORS && op->tensors[op->n_tensors - 1].is_output);
    *out = NULL;
    rlt_status st = RLT_STATUS_OK;
    rlt_kernel_src ref_src = {0};
    rlt_build_result *build = NULL;
    rlt_workload *w = rlt_calloc(1, sizeof *w);
    if (!w) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a workload");
        goto cleanup;
    }
    w->op = op;
    w->n_inputs = op->n_tensors - 1;
    for (int t = 0; t < w->n_inputs; t++) {
        int64_t n = rlt_op_tensor_size(op, t);
        w->input_map_bytes[t] = (size_t)n * sizeof(float);
        w->inputs[t] = map_shared(w->input_map_bytes[t]);
        if (!w->inputs[t]) {
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "cannot map %zu bytes for input %s: %s",
                          w->input_map_bytes[t], op->tensors[t].name, strerror(errno));
            goto cleanup;
        }
        rlt_tensor_fill(w->inputs[t], n, seed + (uint64_t)t);
    }
    w->n_out = rlt_op_tensor_size(op, op->n_tensors - 1);
    w->ref_map_bytes = 2 * (size_t)w->n_out * sizeof(double);
    w->ref = map_shared(w->ref_map_bytes);
    if (!w->ref) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "cannot map %zu bytes for the reference output: %s",
                      w->ref_map_bytes, strerror(errno));
        goto cleanup;
    }
    w->magnitude = w->ref + w->n_out;
    for (int64_t i = 0; i < 2 * w->n_out; i++) w->ref[i] = NAN; /* unwritten elements show */

    st = rlt_codegen_reference(op, &ref_src, diag);
    if (st != RLT_STATUS_OK) {
        rlt_diag_prefix(diag, "reference kernel of %s", op->spec);
        goto cleanup;
    }
    /* The reference is compiled plainly whatever the tuning flags say: it
     * must be right, not fast. */
    rlt_build_opts ref_opts = opts ? *opts : (rlt_build_opts){0};
    ref_opts.cflags = RLT_REFERENCE_CFLAGS;
    build = rlt_calloc(1, sizeof *build);
    if (!build) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory building the reference");
        goto cleanup;
    }
    st = rlt_build_batch(&ref_opts, 1, &ref_src, build, diag);
    if (st != RLT_STATUS_OK) {
        rlt_diag_prefix(diag, "reference kernel of %s", op->spec);
        goto cleanup;
    }
    if (build->status != RLT_STATUS_OK) {
        st = rlt_fail(diag, build->status, "the reference kernel of %s did not compile (a bug in rltune): %s",
                      op->spec, build->log);
        goto cleanup;
    }

    reference_ctx ctx = {.w = w, .build = build};
    child_report rep;
    char err[256];
    st = child_run(reference_child, &ctx, RUN_REFERENCE_TIMEOUT_S, &rep, err, sizeof err);
    if (st != RLT_STATUS_OK) {
        st = rlt_fail(diag, st, "reference of %s: %s", op->spec, err);
        goto cleanup;
    }
    char msg[sizeof rep.note + 128];
    if (!rep.has_result) {
        st = child_failure(&rep, "the reference kernel", RUN_REFERENCE_TIMEOUT_S, msg, sizeof msg);
        st = rlt_fail(diag, st, "%s: %s", op->spec, msg);
        goto cleanup;
    }
    if (rep.result.result.status != RLT_STATUS_OK) {
        st = rlt_fail(diag, rep.result.result.status, "the reference kernel of %s failed: %s", op->spec,
                      rep.result.result.message);
        goto cleanup;
    }
    for (int64_t i = 0; i < w->n_out; i++) {
        if (!isfinite(w->ref[i]) || !isfinite(w->magnitude[i]) || w->magnitude[i] < 0) {
            char where[128];
            format_output_index(op, i, where, sizeof where);
            st = rlt_fail(diag, RLT_STATUS_INTERNAL,
                          "the reference of %s gave %s = %g with magnitude %g (not finite, or never written)",
                          op->spec, where, w->ref[i], w->magnitude[i]);
            goto cleanup;
        }
    }
    *out = w;
    w = NULL;

cleanup:
    rlt_kernel_src_free(&ref_src);
    rlt_free(build);
    rlt_workload_destroy(w);
    return st;
}

/* ---- runner ------------------------------------------------------------- */

/* The line of a compiler log worth showing in one message: the first that
 * says "error", else the first non-empty one. */
static void log_headline(const char *log, char *buf, size_t cap)
{
    const char *line = NULL;
    for (const char *p = log; *p; p += strcspn(p, "\n"), p += *p == '\n') {
        size_t n = strcspn(p, "\n");
        if (!line && n > 0) line = p;
        const char *e = strstr(p, "error");
        if (e && e < p + n) {
            line = p;
            break;
        }
    }
    if (!line) line = "";
    snprintf(buf, cap, "%.*s", (int)strcspn(line, "\n"), line);
}

void rlt_run_kernel(const rlt_workload *w, const rlt_build_result *build, const rlt_run_opts *opts,
                    rlt_run_result *out)
{
    RLT_ASSERT(w && build && out);
    memset(out, 0, sizeof *out);
    if (build->status != RLT_STATUS_OK) {
        char headline[400];
        log_headline(build->log, headline, sizeof headline);
        out->status = build->status;
        snprintf(out->message, sizeof out->message, "not built (%s): %s", rlt_status_str(build->status), headline);
        return;
    }
    static const rlt_run_opts default_opts;
    if (!opts) opts = &default_opts;
    run_ctx c = {
        .w = w,
        .build = build,
        .number = opts->number > 0 ? RLT_MIN(opts->number, RUN_NUMBER_MAX) : 1,
        .repeat = opts->repeat > 0 ? opts->repeat : 5,
        .warmup = opts->warmup > 0 ? opts->warmup : 1,
        .n_threads = opts->n_threads > 0 ? opts->n_threads : 1,
        .min_repeat_ms = opts->min_repeat_ms > 0 ? opts->min_repeat_ms : 20.0,
        .timeout_s = opts->timeout_s > 0 ? opts->timeout_s : 10.0,
        .slow_cutoff_ms = opts->slow_cutoff_ms > 0 ? opts->slow_cutoff_ms : 0.0,
        .no_pin = opts->no_pin,
        .cold_weights = opts->cold_weights,
    };
    child_report rep;
    char err[256];
    if (child_run(kernel_child, &c, c.timeout_s, &rep, err, sizeof err) != RLT_STATUS_OK) {
        out->status = RLT_STATUS_IO_ERROR;
        snprintf(out->message, sizeof out->message, "%s", err);
        return;
    }
    if (rep.has_result) {
        *out = rep.result.result;
        if (out->status != RLT_STATUS_OK) {
            out->is_correct = false;
            out->gflops = 0.0;
        }
        return;
    }
    out->status = child_failure(&rep, "the kernel", c.timeout_s, out->message, sizeof out->message);
}
