/* End-to-end tests of `rltune show --stage` (src/cli/cmd_show.c): each stage
 * of code generation alone. `--stage nest` prints what --tree-only prints,
 * `--stage c` what --c-only prints, `--stage lowered` the lowered loops (a
 * tiled matmul's unrolled copies, tail version and partial vector); a stage
 * that does not exist, or --stage with --tree-only or --c-only, is a usage
 * error (exit 2, nothing on stdout, one "rltune: error:" line naming it).
 * Nothing is compiled. */
#include "cli_runner.h"

#define OP "matmul:M=13,N=17,K=9"
#define SCHED "split i 4\nsplit j 8\nreorder i.o j.o i.i k j.i\nunroll i.i\nvectorize j.i\n"

TestSuite(cli_show, .timeout = 60);

Test(cli_show, stage_nest_and_c_are_tree_only_and_c_only)
{
    const char *pairs[2][2] = {{"nest", "--tree-only"}, {"c", "--c-only"}};
    for (int i = 0; i < 2; i++) {
        cli_run s = CLI_STDIN(SCHED, "show", "--op", OP, "--schedule", "-", "--stage", pairs[i][0]);
        cli_run o = CLI_STDIN(SCHED, "show", "--op", OP, "--schedule", "-", pairs[i][1]);
        assert_ok(&s);
        assert_ok(&o);
        cr_assert_str_eq(s.out, o.out, "--stage %s differs from %s", pairs[i][0], pairs[i][1]);
        cli_run_free(&s);
        cli_run_free(&o);
    }
}

Test(cli_show, stage_lowered_prints_the_lowered_loops)
{
    cli_run r = CLI_STDIN(SCHED, "show", "--op", OP, "--schedule", "-", "--stage", "lowered");
    assert_ok(&r);
    cr_assert_eq(strncmp(r.out, "for i_o < 4\n", 12), 0, "%s", r.out);
    assert_has(r.out, "version on guards: i_o*4 + 3 < 13", "--stage lowered");
    assert_has(r.out, "copy i_i = 3", "--stage lowered");
    assert_has(r.out, "partial vector of rlt_nv1 = rlt_lmin(8, rlt_lane_to(j_o*8, 1, 17)) lanes", "--stage lowered");
    assert_has(r.out, "compute: A[i,k] * B[k,j] (vector, masked", "--stage lowered");
    assert_has(r.out, "load B[k,j]: masked vector, lanes [0, rlt_nv1)", "--stage lowered");
    assert_has(r.out, "output C: masked vector", "--stage lowered");
    cr_assert_null(strstr(r.out, "rlt_k_"), "%s", r.out);
    cli_run_free(&r);
}

Test(cli_show, bad_stage_is_refused)
{
    EXPECT_USAGE_ERROR("--stage 'tree' is not a stage: use nest, lowered or c", "show", "--op", OP, "--stage",
                       "tree");
    EXPECT_USAGE_ERROR("cannot be combined", "show", "--op", OP, "--stage", "c", "--tree-only");
    EXPECT_USAGE_ERROR("cannot be combined", "show", "--op", OP, "--stage", "lowered", "--c-only");
}
