/*
 * gnuplot.c - PNG plots through gnuplot (rlt_gnuplot_png): the plot's data
 * as a whitespace-separated table and a gnuplot script that draws the same
 * figure as svg.c (a line and a translucent min-max band per series, the
 * dashed reference), then `gnuplot SCRIPT` run in the output directory
 * under a time limit. Nothing here is required: without gnuplot the SVG
 * plots stand alone, and the caller says once that PNGs were skipped.
 *
 * The program is started with posix_spawnp (no fork of a process that may
 * hold BLAS threads), in a process group of its own, stdin and stdout
 * /dev/null, stderr captured; past the time limit the group is killed.
 */
#include "report/report.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* A gnuplot string literal: single quotes, in which only '' is special;
 * line breaks become spaces. */
static void gp_quote(rlt_str *out, const char *text)
{
    rlt_str_append(out, "'");
    for (const char *p = text ? text : ""; *p; p++) {
        if (*p == '\'')
            rlt_str_append(out, "''");
        else if (*p == '\n' || *p == '\r')
            rlt_str_append(out, " ");
        else
            rlt_str_appendn(out, p, 1);
    }
    rlt_str_append(out, "'");
}

/* Whether the series have x values of their own: then the data file holds
 * one block per series (x, mean, min, max), which the script picks by
 * gnuplot's `index`. */
static bool has_own_x(const rlt_plot *p)
{
    for (int i = 0; i < p->n_series; i++)
        if (p->series[i].x) return true;
    return false;
}

static void write_blocks(const rlt_plot *p, rlt_str *out)
{
    rlt_str_append(out, "# one block per series (gnuplot's index 0, 1, ...): x mean min max\n");
    for (int i = 0; i < p->n_series; i++) {
        const rlt_plot_series *s = &p->series[i];
        rlt_str_printf(out, "%s# series %d\n", i ? "\n\n" : "", i + 1);
        if (s->n == 0) rlt_str_append(out, "? ? ? ?\n"); /* an empty block would end the file early */
        for (int k = 0; k < s->n; k++)
            rlt_str_printf(out, "%.17g %.17g %.17g %.17g\n", s->x ? s->x[k] : (double)(k + 1), s->y[k],
                           s->lo ? s->lo[k] : s->y[k], s->hi ? s->hi[k] : s->y[k]);
    }
}

static void write_data(const rlt_plot *p, rlt_str *out)
{
    if (has_own_x(p)) {
        write_blocks(p, out);
        return;
    }
    int n_max = 0;
    rlt_str_append(out, "# x");
    for (int i = 0; i < p->n_series; i++) {
        n_max = RLT_MAX(n_max, p->series[i].n);
        rlt_str_printf(out, "  mean_%d min_%d max_%d", i + 1, i + 1, i + 1);
    }
    rlt_str_append(out, "\n# ? = no value (the series is shorter)\n");
    for (int k = 0; k < n_max; k++) {
        rlt_str_printf(out, "%d", k + 1);
        for (int i = 0; i < p->n_series; i++) {
            const rlt_plot_series *s = &p->series[i];
            if (k >= s->n) {
                rlt_str_append(out, " ? ? ?");
                continue;
            }
            rlt_str_printf(out, " %.17g %.17g %.17g", s->y[k], s->lo ? s->lo[k] : s->y[k], s->hi ? s->hi[k] : s->y[k]);
        }
        rlt_str_append(out, "\n");
    }
}

static void write_script(const rlt_plot *p, const char *data_name, const char *png_name, rlt_str *out)
{
    rlt_str_append(out, "# Written by rltune experiment: `gnuplot THIS_FILE` in its directory redraws the PNG.\n");
    /* pngcairo draws dashes and smooth lines; libgd's png is the fallback */
    rlt_str_append(out, "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
                        "    set terminal pngcairo size 820,500\n"
                        "} else {\n"
                        "    set terminal png size 820,500 truecolor\n"
                        "}\n"
                        "set termoption noenhanced\n"
                        "# rltune passes -e \"out='...'\" to write under a temporary name first\n"
                        "if (!exists('out')) out = ");
    gp_quote(out, png_name);
    rlt_str_append(out, "\nset output out");
    rlt_str_append(out, "\nset title ");
    gp_quote(out, p->title);
    rlt_str_append(out, "\nset xlabel ");
    gp_quote(out, p->x_label);
    rlt_str_append(out, "\nset ylabel ");
    gp_quote(out, p->y_label);
    rlt_str_printf(out, "\nset key %s right box opaque\nset grid\nset datafile missing '?'\n",
                   p->is_legend_top ? "top" : "bottom");
    rlt_str_append(out, "set style fill transparent solid 0.18 noborder\nset xrange [0:*]\nset yrange [0:*]\n");
    rlt_str_append(out, "plot \\\n");
    bool is_first = true;
    for (int i = 0; i < p->n_series; i++) {
        if (!(p->series[i].lo && p->series[i].hi)) continue;
        rlt_str_printf(out, "%s  ", is_first ? "" : ", \\\n");
        gp_quote(out, data_name);
        if (has_own_x(p))
            rlt_str_printf(out, " index %d using 1:3:4 with filledcurves lc rgb '%s' notitle", i, rlt_plot_colour(i));
        else
            rlt_str_printf(out, " using 1:%d:%d with filledcurves lc rgb '%s' notitle", 3 + 3 * i, 4 + 3 * i,
                           rlt_plot_colour(i));
        is_first = false;
    }
    for (int i = 0; i < p->n_series; i++) {
        rlt_str_printf(out, "%s  ", is_first ? "" : ", \\\n");
        gp_quote(out, data_name);
        if (has_own_x(p))
            rlt_str_printf(out, " index %d using 1:2 with lines lw 2 lc rgb '%s' title ", i, rlt_plot_colour(i));
        else
            rlt_str_printf(out, " using 1:%d with lines lw 2 lc rgb '%s' title ", 2 + 3 * i, rlt_plot_colour(i));
        gp_quote(out, p->series[i].label);
        is_first = false;
    }
    if (p->reference_y > 0 && isfinite(p->reference_y)) {
        rlt_str_printf(out, "%s  %.17g with lines dt 2 lc rgb '#444444' title ", is_first ? "" : ", \\\n",
                       p->reference_y);
        gp_quote(out, p->reference_label);
        is_first = false;
    }
    if (is_first) rlt_str_append(out, "  0 notitle");
    rlt_str_append(out, "\n");
}

static rlt_status write_in(const char *dir, const char *name, const rlt_str *text, rlt_diag *diag)
{
    char path[4096];
    if (text->has_failed) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory writing %s", name);
    int n = snprintf(path, sizeof path, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= sizeof path)
        return rlt_fail(diag, RLT_STATUS_IO_ERROR, "path too long: %s/%s", dir, name);
    return rlt_file_write(path, text->data ? text->data : "", text->len, diag);
}

static double now_s(void) { return (double)rlt_time_ns() * 1e-9; }

/* Runs `prog script` in dir; *out_is_absent when it cannot be started. */
static rlt_status run_gnuplot(const char *prog, const char *dir, const char *script, const char *out_arg,
                              double timeout_s, bool *out_is_absent, rlt_diag *diag)
{
    int err_pipe[2];
    if (pipe2(err_pipe, O_CLOEXEC) != 0)
        return rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot start %s: pipe: %s", prog, strerror(errno));
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
    posix_spawn_file_actions_addchdir_np(&fa, dir);
    posix_spawnattr_setpgroup(&attr, 0);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    char *argv[] = {(char *)prog, "-e", (char *)out_arg, (char *)script, NULL};
    pid_t pid = 0;
    int e = posix_spawnp(&pid, prog, &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(err_pipe[1]);
    if (e != 0) {
        close(err_pipe[0]);
        if (e == ENOENT || e == EACCES || e == ENOTDIR) {
            *out_is_absent = true;
            return RLT_STATUS_OK;
        }
        return rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot start %s: %s", prog, strerror(e));
    }
    char err[2048];
    size_t err_len = 0;
    bool is_timed_out = false;
    double deadline = now_s() + timeout_s;
    for (;;) {
        double left = deadline - now_s();
        if (left <= 0) {
            is_timed_out = true;
            kill(-pid, SIGKILL);
            break;
        }
        struct pollfd pfd = {.fd = err_pipe[0], .events = POLLIN};
        int r = poll(&pfd, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) continue;
        char buf[512];
        ssize_t got = read(err_pipe[0], buf, sizeof buf);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break; /* closed: gnuplot has ended (or closed stderr) */
        size_t take = RLT_MIN((size_t)got, sizeof err - 1 - err_len);
        memcpy(err + err_len, buf, take);
        err_len += take;
    }
    close(err_pipe[0]);
    err[err_len] = '\0';
    int status = 0;
    /* stderr closed but the process may linger a moment: wait, within the limit */
    while (!is_timed_out) {
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid) break;
        if (got < 0 && errno != EINTR) break;
        if (now_s() > deadline) {
            is_timed_out = true;
            kill(-pid, SIGKILL);
            break;
        }
        nanosleep(&(struct timespec){.tv_nsec = 5 * 1000 * 1000}, NULL);
    }
    if (is_timed_out) {
        waitpid(pid, &status, 0);
        return rlt_fail(diag, RLT_STATUS_IO_ERROR, "%s %s ran past %g s and was stopped", prog, script, timeout_s);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        const char *first = err + strspn(err, "\r\n "); /* its first line that says something */
        int first_len = (int)strcspn(first, "\r\n");
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && first_len == 0) {
            *out_is_absent = true;
            return RLT_STATUS_OK;
        }
        return rlt_fail(diag, RLT_STATUS_IO_ERROR, "%s %s failed (%s %d)%s%.*s", prog, script,
                        WIFEXITED(status) ? "exit" : "signal",
                        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), first_len ? ": " : "",
                        RLT_MIN(first_len, 300), first);
    }
    return RLT_STATUS_OK;
}

rlt_status rlt_gnuplot_png(const rlt_plot *p, const char *dir, const char *data_name, const char *script_name,
                           const char *png_name, double timeout_s, bool *out_is_absent, rlt_diag *diag)
{
    *out_is_absent = false;
    rlt_str data, script;
    rlt_str_init(&data);
    rlt_str_init(&script);
    write_data(p, &data);
    write_script(p, data_name, png_name, &script);
    rlt_status st = write_in(dir, data_name, &data, diag);
    if (st == RLT_STATUS_OK) st = write_in(dir, script_name, &script, diag);
    rlt_str_free(&data);
    rlt_str_free(&script);
    if (st != RLT_STATUS_OK) return st;
    const char *prog = getenv("RLTUNE_GNUPLOT");
    if (!prog || !*prog) prog = "gnuplot";
    /* gnuplot writes a temporary file, renamed when complete: a PNG is
     * never left half drawn, and an old one never passes for a new one */
    char png_path[4096], tmp_name[600], tmp_path[4096], out_arg[700];
    snprintf(png_path, sizeof png_path, "%s/%s", dir, png_name);
    snprintf(tmp_name, sizeof tmp_name, "%s.tmp.%ld", png_name, (long)getpid());
    snprintf(tmp_path, sizeof tmp_path, "%s/%s", dir, tmp_name);
    snprintf(out_arg, sizeof out_arg, "out='%s'", tmp_name); /* file names of ours: no quote in them */
    unlink(png_path);
    unlink(tmp_path);
    st = run_gnuplot(prog, dir, script_name, out_arg, timeout_s, out_is_absent, diag);
    struct stat sb;
    bool has_png = st == RLT_STATUS_OK && !*out_is_absent && stat(tmp_path, &sb) == 0 && sb.st_size > 0;
    if (has_png && rename(tmp_path, png_path) != 0)
        st = rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot write '%s': %s", png_path, strerror(errno));
    if (!has_png || st != RLT_STATUS_OK) unlink(tmp_path);
    if (st != RLT_STATUS_OK || *out_is_absent || has_png) return st;
    return rlt_fail(diag, RLT_STATUS_IO_ERROR, "%s %s wrote no %s", prog, script_name, png_name);
}
