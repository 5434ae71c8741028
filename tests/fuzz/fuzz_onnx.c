/*
 * fuzz_onnx.c - libFuzzer target for the ONNX importer: the input is
 * loaded as a model (rlt_graph_load_onnx_bytes: protobuf decoding, tensor
 * data checks, sorting, shape inference, folding, dead-code elimination).
 * Nothing may crash, leak, hang or read out of bounds; every failure must
 * be a status with a message that hands out no graph. A graph that loads
 * must be consistent: every node's inputs and outputs are tensors or -1,
 * every tensor has a shape, the nodes are in topological order, and it
 * prints.
 *
 * Built with clang by the CMake option RLTUNE_FUZZ and run by
 * scripts/fuzz.sh (part of scripts/test.sh: FUZZ_SECONDS each, 20 by
 * default, inputs up to 4096 bytes) over a scratch copy of its corpus,
 * tests/fuzz/corpus/onnx/, which tests/unit/test_graph_onnx.c also replays
 * in every test run (files named valid_* must load, the others must be
 * refused). The valid_* and refused_* seeds are written by that test's
 * corpus_seeds case (RLTUNE_ONNX_CORPUS_OUT=DIR). To fuzz it longer, from
 * the repository root:
 *
 *   FUZZ_SECONDS=600 scripts/fuzz.sh onnx
 */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

static void check_graph(const rlt_graph *g)
{
    for (int t = 0; t < g->n_tensors; t++)
        if (!g->tensors[t].has_shape || g->tensors[t].rank < 0 || g->tensors[t].rank > RLT_GRAPH_MAX_RANK) abort();
    for (int n = 0; n < g->n_nodes; n++) {
        const rlt_graph_node *node = &g->nodes[n];
        if (node->is_removed) abort();
        for (int i = 0; i < node->n_inputs; i++) {
            int t = node->inputs[i];
            if (t < -1 || t >= g->n_tensors) abort();
            if (t >= 0 && g->tensors[t].producer >= n) abort(); /* topological order */
        }
        for (int o = 0; o < node->n_outputs; o++) {
            int t = node->outputs[o];
            if (t < -1 || t >= g->n_tensors) abort();
            if (t >= 0 && g->tensors[t].producer != n) abort();
        }
    }
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] < 0 || g->inputs[i] >= g->n_tensors) abort();
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] < 0 || g->outputs[i] >= g->n_tensors) abort();
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    rlt_graph *g = NULL;
    rlt_diag d = {0};
    rlt_status st = rlt_graph_load_onnx_bytes(data, size, "fuzz", &g, &d);
    if (st != RLT_STATUS_OK) {
        if (g || d.status != st || d.message[0] == '\0') abort();
        return 0;
    }
    if (!g) abort();
    check_graph(g);
    char *text = rlt_graph_print(g);
    if (!text) abort();
    rlt_free(text);
    rlt_graph_destroy(g);
    return 0;
}
