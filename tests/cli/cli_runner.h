/* cli_runner.h - runs the real rltune binary (RLTUNE_BINARY, set by CMake)
 * from a Criterion test with fork/exec: stdout, stderr and the exit code
 * captured under a time limit, or started in the background (cli_spawn,
 * cli_wait) for a test that signals it; and the assertions the CLI tests share
 * (exit 0; a usage error: exit 2, nothing on stdout, one "rltune: error:"
 * line naming the problem); the argv these runs build (cli_argv_fill).
 * Shared by tests/cli/test_*.c. */
#ifndef RLT_TESTS_CLI_RUNNER_H
#define RLT_TESTS_CLI_RUNNER_H

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUN_LIMIT_S 60 /* one run of the binary */

/* ---- running the binary ------------------------------------------------- */

typedef struct cli_run {
    int exit_code;  /* -1 when killed by a signal or the time limit */
    bool timed_out;
    char *out;      /* stdout, NUL-terminated */
    char *err;      /* stderr, NUL-terminated */
} cli_run;

static inline void append_bytes(char **buf, size_t *len, const char *data, size_t n)
{
    *buf = realloc(*buf, *len + n + 1);
    cr_assert_not_null(*buf);
    memcpy(*buf + *len, data, n);
    *len += n;
    (*buf)[*len] = '\0';
}

#define CLI_MAX_ARGS 62 /* arguments after the program's name */

/* argv for execv: `program`, then `args` (NULL-terminated, at most
 * CLI_MAX_ARGS of them, borrowed), then NULL. */
static inline void program_argv_fill(const char *argv[CLI_MAX_ARGS + 2], const char *program, const char *const *args)
{
    int argc = 0;
    argv[argc++] = program;
    for (int i = 0; args[i]; i++) {
        cr_assert_lt(argc, CLI_MAX_ARGS + 1);
        argv[argc++] = args[i];
    }
    argv[argc] = NULL;
}

/* The same for RLTUNE_BINARY. */
static inline void cli_argv_fill(const char *argv[CLI_MAX_ARGS + 2], const char *const *args)
{
    program_argv_fill(argv, RLTUNE_BINARY, args);
}

/* Runs `program` (a path) with `args` (NULL-terminated), feeding `in` (may
 * be NULL: /dev/null) on stdin. */
static inline cli_run run_program_argv(const char *program, const char *in, const char *const *args)
{
    const char *argv[CLI_MAX_ARGS + 2];
    program_argv_fill(argv, program, args);

    int out_pipe[2], err_pipe[2], in_pipe[2];
    cr_assert_eq(pipe(out_pipe), 0);
    cr_assert_eq(pipe(err_pipe), 0);
    cr_assert_eq(pipe(in_pipe), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        setpgid(0, 0); /* so the time limit can kill everything it started */
        dup2(in_pipe[0], 0);
        dup2(out_pipe[1], 1);
        dup2(err_pipe[1], 2);
        close(in_pipe[0]);
        close(in_pipe[1]);
        close(out_pipe[0]);
        close(out_pipe[1]);
        close(err_pipe[0]);
        close(err_pipe[1]);
        execv(program, (char *const *)argv);
        _exit(127);
    }
    setpgid(pid, pid);
    close(in_pipe[0]);
    close(out_pipe[1]);
    close(err_pipe[1]);
    /* Inputs are small (well under a pipe's buffer), so writing them all
     * before reading cannot deadlock. */
    signal(SIGPIPE, SIG_IGN);
    if (in) {
        size_t n = strlen(in);
        cr_assert_eq(write(in_pipe[1], in, n), (ssize_t)n);
    }
    close(in_pipe[1]);

    cli_run r = {.exit_code = -1};
    size_t out_len = 0, err_len = 0;
    append_bytes(&r.out, &out_len, "", 0);
    append_bytes(&r.err, &err_len, "", 0);
    struct pollfd fds[2] = {{.fd = out_pipe[0], .events = POLLIN}, {.fd = err_pipe[0], .events = POLLIN}};
    time_t deadline = time(NULL) + RUN_LIMIT_S;
    int n_open = 2;
    while (n_open > 0) {
        int left_ms = (int)(deadline - time(NULL)) * 1000;
        if (left_ms <= 0) {
            r.timed_out = true;
            kill(-pid, SIGKILL);
            break;
        }
        int p = poll(fds, 2, left_ms);
        if (p < 0 && errno == EINTR) continue;
        cr_assert_geq(p, 0);
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            char buf[4096];
            ssize_t got = read(fds[i].fd, buf, sizeof buf);
            if (got > 0) {
                if (i == 0)
                    append_bytes(&r.out, &out_len, buf, (size_t)got);
                else
                    append_bytes(&r.err, &err_len, buf, (size_t)got);
            } else if (got == 0 || errno != EINTR) {
                close(fds[i].fd);
                fds[i].fd = -1;
                n_open--;
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0) close(fds[i].fd);
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    if (WIFEXITED(status) && !r.timed_out) r.exit_code = WEXITSTATUS(status);
    return r;
}

/* Runs RLTUNE_BINARY with `args`, feeding `in` (may be NULL) on stdin. */
static inline cli_run run_cli_argv(const char *in, const char *const *args)
{
    return run_program_argv(RLTUNE_BINARY, in, args);
}

#define CLI(...) run_cli_argv(NULL, (const char *const[]){__VA_ARGS__, NULL})

/* ---- running the binary in the background -------------------------------- */

/* Starts `program` (a path; cli_spawn: RLTUNE_BINARY) with `args`
 * (NULL-terminated) and returns at once:
 * stdin /dev/null, stdout and stderr into the files out_path and err_path
 * (created or truncated), in a process group of its own whose id is the
 * returned pid (kill(-pid, ...) reaches everything it started there). The
 * environment is the caller's. Wait for it with cli_wait. */
static inline pid_t program_spawn(const char *program, const char *const *args, const char *out_path,
                                  const char *err_path)
{
    const char *argv[CLI_MAX_ARGS + 2];
    program_argv_fill(argv, program, args);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        setpgid(0, 0);
        int in = open("/dev/null", O_RDONLY);
        int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (in < 0 || out < 0 || err < 0) _exit(126);
        dup2(in, 0);
        dup2(out, 1);
        dup2(err, 2);
        close(in);
        close(out);
        close(err);
        execv(program, (char *const *)argv);
        _exit(127);
    }
    setpgid(pid, pid); /* also here, so that it holds before either side goes on */
    return pid;
}

static inline pid_t cli_spawn(const char *const *args, const char *out_path, const char *err_path)
{
    return program_spawn(RLTUNE_BINARY, args, out_path, err_path);
}

/* Waits up to limit_s seconds for a process started by cli_spawn and
 * returns its wait status. Past the limit it kills the process group and
 * fails the test. */
static inline int cli_wait(pid_t pid, double limit_s)
{
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        int status = 0;
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid) return status;
        cr_assert(got == 0 || errno == EINTR, "waitpid(%d): %s", (int)pid, strerror(errno));
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) * 1e-9 > limit_s) {
            kill(-pid, SIGKILL);
            waitpid(pid, &status, 0);
            cr_assert_fail("rltune (pid %d) ran past %g s", (int)pid, limit_s);
        }
        nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
    }
}
#define CLI_STDIN(in, ...) run_cli_argv(in, (const char *const[]){__VA_ARGS__, NULL})

static inline void cli_run_free(cli_run *r)
{
    free(r->out);
    free(r->err);
}

static inline void assert_has(const char *text, const char *needle, const char *what)
{
    cr_assert_not_null(strstr(text, needle), "%s lacks \"%s\":\n%s", what, needle, text);
}

/* Exit 0 and nothing alarming on stderr. */
static inline void assert_ok(const cli_run *r)
{
    cr_assert(!r->timed_out, "rltune ran past %d s", RUN_LIMIT_S);
    cr_assert_eq(r->exit_code, 0, "exit %d, stderr:\n%s", r->exit_code, r->err);
}

/* Exit 2, nothing on stdout, exactly one line on stderr: the prefix, then a
 * message containing `needle`. */
static inline void assert_usage_error(const cli_run *r, const char *needle)
{
    cr_assert(!r->timed_out);
    cr_assert_eq(r->exit_code, 2, "exit %d, stderr:\n%s", r->exit_code, r->err);
    cr_assert_str_empty(r->out, "stdout not empty:\n%s", r->out);
    cr_assert_eq(strncmp(r->err, "rltune: error: ", 15), 0, "stderr: %s", r->err);
    size_t len = strlen(r->err);
    cr_assert(len > 0 && r->err[len - 1] == '\n' && strchr(r->err, '\n') == r->err + len - 1,
              "stderr is not exactly one line:\n%s", r->err);
    assert_has(r->err, needle, "stderr");
}

#define EXPECT_USAGE_ERROR(needle, ...)                  \
    do {                                                 \
        cli_run r_ = CLI(__VA_ARGS__);                   \
        assert_usage_error(&r_, needle);                 \
        cli_run_free(&r_);                               \
    } while (0)

#endif /* RLT_TESTS_CLI_RUNNER_H */
