/*
 * seeds.c - the rule-built seeds of ops (src/space/seeds.c), printed
 * without building anything: the input of bench/seeds_ab.py, which
 * measures the seeds of two builds against each other.
 *
 *   bench_seeds [--threads N] [--count N] [--out DIR] < SPECS
 *
 * Reads one op spec a line (blank lines and '#' comments skipped) and
 * prints, for each, a tab-separated line: its line number (from 0, counting
 * the specs only), the spec, and the configuration key of each of its first
 * --count seeds (default 1: the seed an untuned network runs, `rltune run`,
 * and the one a graph search costs a kernel by). With --out, seed j of spec
 * i is also written as the schedule DIR/i.j.sched, which `rltune measure
 * --schedule` takes (seeds are gcc's: measure with the default compiler).
 * A spec that does not parse is reported on stderr and skipped; the exit
 * status is then 2.
 */
#include "net/net.h"
#include "rltune/op.h"
#include "space/space.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SEEDS 16

static int usage(void)
{
    fprintf(stderr, "usage: bench_seeds [--threads N] [--count N (1..%d)] [--out DIR] < SPECS\n", MAX_SEEDS);
    return 2;
}

/* Writes seed c of space s as a schedule file; false (with a message) on failure. */
static bool write_schedule(const rlt_space *s, const rlt_config *c, const char *path)
{
    rlt_diag d = {0};
    rlt_sched *sched = NULL;
    const char *cc = NULL;
    if (rlt_space_schedule(s, c, &sched, &cc, &d) != RLT_STATUS_OK) {
        fprintf(stderr, "bench_seeds: %s: %s\n", path, d.message);
        return false;
    }
    rlt_str text;
    rlt_str_init(&text);
    rlt_sched_print(sched, &text);
    rlt_sched_destroy(sched);
    FILE *f = fopen(path, "w");
    bool ok = f && !text.has_failed && fputs(text.data ? text.data : "", f) >= 0 && fputc('\n', f) != EOF;
    if (f && fclose(f) != 0) ok = false;
    if (!ok) fprintf(stderr, "bench_seeds: cannot write %s\n", path);
    rlt_str_free(&text);
    return ok;
}

int main(int argc, char **argv)
{
    int threads = 1, count = 1;
    const char *out_dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) count = atoi(argv[++i]);
        else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) out_dir = argv[++i];
        else return usage();
    }
    if (threads < 1 || threads > 256 || count < 1 || count > MAX_SEEDS) return usage();
    char line[4096];
    int n = 0, status = 0;
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0] || line[0] == '#') continue;
        int id = n++;
        rlt_diag d = {0};
        rlt_op *op = NULL;
        rlt_space space;
        rlt_space_opts so = {.n_threads = threads, .no_clang = true}; /* as rlt_net_seed_nest makes it */
        if (rlt_op_parse(line, &op, &d) != RLT_STATUS_OK || rlt_space_create(op, &so, &space, &d) != RLT_STATUS_OK) {
            fprintf(stderr, "bench_seeds: spec %d (%s): %s\n", id, line, d.message);
            rlt_op_destroy(op);
            status = 2;
            continue;
        }
        rlt_config seeds[MAX_SEEDS];
        int n_seeds = rlt_space_seeds(&space, count, seeds);
        printf("%d\t%s", id, line);
        for (int j = 0; j < n_seeds; j++) {
            rlt_str key;
            rlt_str_init(&key);
            rlt_space_config_key(&space, &seeds[j], &key);
            printf("\t%s", key.data ? key.data : "");
            rlt_str_free(&key);
            if (out_dir) {
                char path[4096];
                snprintf(path, sizeof path, "%s/%d.%d.sched", out_dir, id, j);
                if (!write_schedule(&space, &seeds[j], path)) status = 3;
            }
        }
        printf("\n");
        rlt_op_destroy(op);
    }
    return status;
}
