/*
 * cmd_tasks.c - `rltune tasks`: loads an ONNX model (rlt_model_load) and
 * lists its tasks, the distinct kernels rltune tunes with what would fuse
 * into them (rlt_model_tasks), heaviest first by weight x FLOPs, then the
 * network's other kernels (rlt_model_other_kernels); as text or (--json)
 * as one JSON object.
 */
#include "cli/cli.h"
#include "rltune/model.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const rlt_cli_opt tasks_opts[] = {
    {"model", "FILE", "the ONNX model (.onnx) to list the tasks of"},
    {"layout", "L", RLT_CLI_LAYOUT_HELP},
    {"json", NULL, "print exactly one JSON object on stdout instead of the table"},
};

/* A task's place in the table: weight x FLOPs, then its index. */
typedef struct ranked {
    double load;
    int index;
} ranked;

static int ranked_cmp(const void *pa, const void *pb)
{
    const ranked *a = pa, *b = pb;
    if (a->load != b->load) return a->load > b->load ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index); /* ties keep the model's order */
}

/* What the command prints: the tasks in the order it prints them. */
typedef struct tasks_view {
    const char *path;
    rlt_model *model;
    rlt_task *tasks;          /* rlt_free */
    int n_tasks;
    ranked *order;            /* the tasks, heaviest first */
    rlt_other_kernel *others; /* rlt_free */
    int n_others;
    int n_kernels;            /* sum of the weights */
    double total_flops;       /* sum of weight x FLOPs */
} tasks_view;

static int n_other_nodes(const tasks_view *v)
{
    int n = 0;
    for (int i = 0; i < v->n_others; i++) n += v->others[i].count;
    return n;
}

static void print_text(const tasks_view *v)
{
    int n_in = rlt_model_n_inputs(v->model), n_out = rlt_model_n_outputs(v->model);
    printf("model: %s (opset %d): %d nodes, %d input%s, %d output%s\n", v->path, rlt_model_opset(v->model),
           rlt_model_n_nodes(v->model), n_in, n_in == 1 ? "" : "s", n_out, n_out == 1 ? "" : "s");
    if (v->n_tasks == 0) {
        printf("\ntasks: none\n");
    } else {
        printf("\ntasks: %d (%d kernel%s), heaviest first\n", v->n_tasks, v->n_kernels, v->n_kernels == 1 ? "" : "s");
        printf("  %6s %14s %6s  %s\n", "weight", "FLOPs", "share", "op spec (the fused kernel)");
        for (int i = 0; i < v->n_tasks; i++) {
            const rlt_task *t = &v->tasks[v->order[i].index];
            double share = v->total_flops > 0 ? 100.0 * t->weight * t->flops / v->total_flops : 0.0;
            printf("  %6d %14.0f %5.1f%%  %s\n", t->weight, t->flops, share, t->spec);
        }
        printf("  total: %d kernel%s, %.0f FLOPs per run\n", v->n_kernels, v->n_kernels == 1 ? "" : "s",
               v->total_flops);
    }
    if (v->n_others == 0) {
        printf("\nother kernels: none\n");
        return;
    }
    int n = n_other_nodes(v);
    printf("\nother kernels: %d node%s, not tuned\n", n, n == 1 ? "" : "s");
    for (int i = 0; i < v->n_others; i++) {
        const rlt_other_kernel *o = &v->others[i];
        if (o->reason[0])
            printf("  %6d  %s: not tunable yet: %s (first: %s)\n", o->count, o->op_type, o->reason, o->first_node);
        else
            printf("  %6d  %s\n", o->count, o->op_type);
    }
}

/* The JSON document; NULL when out of memory. */
static char *format_json(const tasks_view *v)
{
    char *text = NULL;
    cJSON *root = cJSON_CreateObject();
    if (!root || !cJSON_AddStringToObject(root, "model", v->path) ||
        !rlt_cli_json_add_number(root, "opset", rlt_model_opset(v->model)) ||
        !rlt_cli_json_add_number(root, "n_nodes", rlt_model_n_nodes(v->model)) ||
        !rlt_cli_json_add_number(root, "n_inputs", rlt_model_n_inputs(v->model)) ||
        !rlt_cli_json_add_number(root, "n_outputs", rlt_model_n_outputs(v->model)) ||
        !rlt_cli_json_add_number(root, "n_tasks", v->n_tasks) ||
        !rlt_cli_json_add_number(root, "n_kernels", v->n_kernels) ||
        !rlt_cli_json_add_number(root, "total_flops", v->total_flops))
        goto cleanup;
    cJSON *tasks = cJSON_AddArrayToObject(root, "tasks");
    if (!tasks) goto cleanup;
    for (int i = 0; i < v->n_tasks; i++) {
        const rlt_task *t = &v->tasks[v->order[i].index];
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(tasks, o)) {
            cJSON_Delete(o);
            goto cleanup;
        }
        cJSON *nodes = NULL;
        if (!cJSON_AddStringToObject(o, "spec", t->spec) || !cJSON_AddStringToObject(o, "epilogue", t->epilogue) ||
            !rlt_cli_json_add_number(o, "weight", t->weight) || !rlt_cli_json_add_number(o, "flops", t->flops) ||
            !(nodes = cJSON_AddArrayToObject(o, "nodes")))
            goto cleanup;
        for (int k = 0; k < t->n_nodes; k++) {
            cJSON *s = cJSON_CreateString(t->nodes[k]);
            if (!s || !cJSON_AddItemToArray(nodes, s)) {
                cJSON_Delete(s);
                goto cleanup;
            }
        }
    }
    cJSON *others = cJSON_AddArrayToObject(root, "other_kernels");
    if (!others) goto cleanup;
    for (int i = 0; i < v->n_others; i++) {
        const rlt_other_kernel *ok = &v->others[i];
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(others, o)) {
            cJSON_Delete(o);
            goto cleanup;
        }
        if (!cJSON_AddStringToObject(o, "op_type", ok->op_type) || !rlt_cli_json_add_number(o, "count", ok->count) ||
            !cJSON_AddStringToObject(o, "reason", ok->reason) ||
            !cJSON_AddStringToObject(o, "first_node", ok->first_node))
            goto cleanup;
    }
    text = cJSON_PrintUnformatted(root);
cleanup:
    cJSON_Delete(root);
    return text;
}

static int run_tasks(const rlt_cli_args *args)
{
    int rc = RLT_CLI_EXIT_INTERNAL;
    rlt_diag d = {0};
    rlt_status st;
    tasks_view v = {.path = rlt_cli_args_get(args, "model")};
    char *json = NULL;
    if (!v.path || !v.path[0]) {
        rlt_cli_error("--model FILE is required: the ONNX model to list the tasks of");
        return RLT_CLI_EXIT_USAGE;
    }
    int block = 0;
    if ((rc = rlt_cli_model_layout(args, false, &block)) != RLT_CLI_EXIT_OK) return rc;
    if ((rc = rlt_cli_model_load(v.path, &v.model)) != RLT_CLI_EXIT_OK) return rc;
    rc = RLT_CLI_EXIT_INTERNAL;
    if ((st = rlt_model_tasks_blocked(v.model, block, &v.tasks, &v.n_tasks, &d)) != RLT_STATUS_OK ||
        (st = rlt_model_other_kernels(v.model, &v.others, &v.n_others, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("%s: %s", v.path, d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    if (!(v.order = calloc((size_t)v.n_tasks + 1, sizeof *v.order))) {
        rlt_cli_error("out of memory listing the tasks of %s", v.path);
        goto cleanup;
    }
    for (int i = 0; i < v.n_tasks; i++) {
        v.order[i] = (ranked){.load = v.tasks[i].weight * v.tasks[i].flops, .index = i};
        v.n_kernels += v.tasks[i].weight;
        v.total_flops += v.tasks[i].weight * v.tasks[i].flops;
    }
    qsort(v.order, (size_t)v.n_tasks, sizeof *v.order, ranked_cmp);
    if (rlt_cli_args_has(args, "json")) {
        if (!(json = format_json(&v))) {
            rlt_cli_error("out of memory formatting the tasks of %s", v.path);
            goto cleanup;
        }
        printf("%s\n", json);
    } else {
        print_text(&v);
    }
    rc = RLT_CLI_EXIT_OK;
cleanup:
    cJSON_free(json);
    free(v.order);
    rlt_free(v.others);
    rlt_free(v.tasks);
    rlt_model_destroy(v.model);
    return rc;
}

const rlt_cli_cmd rlt_cli_cmd_tasks = {
    .name = "tasks",
    .brief = "list the tasks of an ONNX model: the kernels rltune tunes, with weights",
    .synopsis = "--model FILE [--layout nchw|nchwc] [--json]",
    .summary = "Loads an ONNX model (shapes inferred, BatchNormalizations folded into their Convs) and\n"
               "lists its tasks: each distinct kernel rltune tunes (Conv as conv2d or depthwise_conv2d,\n"
               "Gemm and MatMul as dense, matmul or batch_matmul) fused with its epilogue, the\n"
               "elementwise nodes after it (bias, add, relu, relu6: ',epilogue=...' in the spec, which\n"
               "'rltune tune --op' takes); weight = how often the network runs it. Heaviest first by\n"
               "weight x FLOPs, then the total and the other kernels (pools, Softmax, Reshape, ... and\n"
               "the Convs / Gemms / MatMuls that do not fit an op yet, with the reason). With --layout\n"
               "nchwc, the tasks of the network in blocked layouts (conv2d's iblock= / oblock=), as\n"
               "'rltune run --layout nchwc' compiles it.",
    .details = "With --json, stdout holds one JSON object: model, opset, n_nodes, n_inputs,\n"
               "n_outputs, n_tasks, n_kernels, total_flops, tasks (heaviest first: spec, epilogue,\n"
               "weight, flops, nodes) and other_kernels (op_type, count, reason, first_node).\n"
               "A missing, unreadable or unsupported model file is bad input (exit 2).\n"
               "Rules and formats: docs/graph.md, \"Tasks\".",
    .n_opts = (int)RLT_CLI_ARRAY_LEN(tasks_opts),
    .opts = tasks_opts,
    .run = run_tasks,
};
