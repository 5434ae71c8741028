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
 * status is then 2. The seeds are those rlt_net_seed_nests makes: what
 * a network compiles without a record (the first) and what a graph search
 * measures.
 */
#include "ir/ir.h"
#include "net/net.h"
#include "rltune/op.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void)
{
    fprintf(stderr, "usage: bench_seeds [--threads N] [--count N (1..%d)] [--out DIR] < SPECS\n", RLT_NET_MAX_SEEDS);
    return 2;
}

/* Writes a schedule's text to path; false (with a message) on failure. */
static bool write_schedule(const rlt_str *text, const char *path)
{
    FILE *f = fopen(path, "w");
    bool ok = f && !text->has_failed && fputs(text->data ? text->data : "", f) >= 0 && fputc('\n', f) != EOF;
    if (f && fclose(f) != 0) ok = false;
    if (!ok) fprintf(stderr, "bench_seeds: cannot write %s\n", path);
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
    if (threads < 1 || threads > 256 || count < 1 || count > RLT_NET_MAX_SEEDS) return usage();
    char line[4096];
    int n = 0, status = 0;
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0] || line[0] == '#') continue;
        int id = n++;
        rlt_diag d = {0};
        rlt_op *op = NULL;
        rlt_nest nests[RLT_NET_MAX_SEEDS];
        rlt_str keys[RLT_NET_MAX_SEEDS], schedules[RLT_NET_MAX_SEEDS];
        for (int j = 0; j < count; j++) {
            rlt_str_init(&keys[j]);
            rlt_str_init(&schedules[j]);
        }
        int n_seeds = 0;
        if (rlt_op_parse(line, &op, &d) != RLT_STATUS_OK ||
            rlt_net_seed_nests(op, threads, count, nests, keys, schedules, &n_seeds, &d) != RLT_STATUS_OK) {
            fprintf(stderr, "bench_seeds: spec %d (%s): %s\n", id, line, d.message);
            status = 2;
        } else {
            printf("%d\t%s", id, line);
            for (int j = 0; j < n_seeds; j++) {
                printf("\t%s", keys[j].data ? keys[j].data : "");
                if (out_dir) {
                    char path[4096];
                    snprintf(path, sizeof path, "%s/%d.%d.sched", out_dir, id, j);
                    if (!write_schedule(&schedules[j], path)) status = 3;
                }
            }
            printf("\n");
        }
        for (int j = 0; j < count; j++) {
            rlt_str_free(&keys[j]);
            rlt_str_free(&schedules[j]);
        }
        rlt_op_destroy(op);
    }
    return status;
}
