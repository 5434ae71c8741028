/* exp_config.h - REPLAY_CONFIG, a hand-written experiment config (what
 * `rltune experiment --config` reads, docs/formats.md): a replayed
 * comparison with two seeds, two workloads (an op with a relative dataset
 * path, an expression with an absolute one) and two tuners (one with
 * options and a label), its description and a label holding characters
 * that HTML must escape. The experiment tests parse it; the report tests
 * give it as the config a hand-made report says it ran. Shared by
 * tests/unit/test_experiment.c and test_report.c. */
#ifndef RLT_TESTS_EXP_CONFIG_H
#define RLT_TESTS_EXP_CONFIG_H

#define REPLAY_CONFIG                                                                                          \
    "{\"name\": \"hand\", \"measure\": \"replay\", \"trials\": 6, \"seeds\": [3, 7],\n"                        \
    " \"description\": \"a <b>bold</b> & 'quoted' test\",\n"                                                   \
    " \"workloads\": [{\"op\": \"matmul:M=4,N=4,K=4\", \"dataset\": \"mm4.db\"},\n"                            \
    "                 {\"expr\": \"B[i] = A[i] * 2\", \"shape\": \"i=2\", \"dataset\": \"/abs/b.db\"}],\n"     \
    " \"tuners\": [\"random\", {\"name\": \"ga-dqn\", \"label\": \"ga-dqn <x & y>\", \"options\": "            \
    "{\"ga_dqn_lr\": 0.003, \"population\": 8}}]}\n"

#endif /* RLT_TESTS_EXP_CONFIG_H */
