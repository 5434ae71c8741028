/*
 * lower_stmt.c - the pass that makes the statements at the leaves of the
 * lowered tree (lowered.h) explicit: for each statement, the bounds guard
 * it takes over from its factors' loads; its expressions as trees of
 * nodes (operations, constants, the accumulator's value, and loads, each
 * with the kind it is emitted as: scalar, broadcast, vector, strided,
 * window, masked, lane by lane); how it reads and writes the output
 * (scalar, vector, masked, lane by lane) or that it updates the
 * accumulator; and its temporaries, numbered: the value an epilogue reads,
 * the vector a lane-by-lane store scatters.
 *
 * Entry points (lowered.h): lower_build_stmt, which fills a STMT node;
 * lower_build_expr, an expression's tree (also for the columns of a
 * transposed write-back); lower_stmt_enter and lower_stmt_leave, which
 * hand the bounds checks a statement took over to the access layer
 * (lower_load.c) for the printer and the dump. The kinds are chosen here,
 * at the node's cursor; lower_print.c prints the expressions, through
 * lower_load.c and lower_access.c.
 */
#include "codegen/lowered.h"

/* Appends e's tree to parent's children: a LOAD with its kind, or an EXPR
 * with its operands under it. */
static void add_expr(lower_gen *g, lowered_node *parent, const rlt_expr *e)
{
    if (e->kind == RLT_EXPR_LOAD) {
        lowered_node *n = lowered_add(g, parent, LOWERED_LOAD, &parent->at);
        n->expr = e;
        n->hoisted = lower_hoisted_dims(g, e);
        n->load = lower_load_choose(g, e);
        return;
    }
    lowered_node *n = lowered_add(g, parent, LOWERED_EXPR, &parent->at);
    n->op = e->kind;
    n->constant = e->value;
    if (e->a) add_expr(g, n, e->a);
    if (e->b) add_expr(g, n, e->b);
}

void lower_build_expr(lower_gen *g, lowered_node *parent, const rlt_expr *e)
{
    lower_cursor_load(g, &parent->at);
    add_expr(g, parent, e);
}

void lower_build_stmt(lower_gen *g, lowered_node *stmt)
{
    const rlt_expr *epi = g->op->epilogue;
    bool has_reduction = g->r0 < g->n->n_loops;
    bool has_output = true;
    lower_cursor_load(g, &stmt->at);
    g->n_hoisted = 0;
    switch (stmt->body) {
    case LOWER_BODY_MAIN: {
        rlt_str guard;
        rlt_str_init(&guard);
        bool is_term = !has_reduction || lower_hoist_factor_checks(g, g->op->body, &guard);
        stmt->text = lowered_keep_text(g, &guard);
        rlt_str_free(&guard);
        if (!is_term) {
            stmt->flavor = LOWERED_OMITTED;
            has_output = false;
            break;
        }
        add_expr(g, stmt, g->op->body);
        if (g->acc_depth < 0 && !has_reduction && epi) {
            stmt->temp = g->n_temps++; /* the epilogue reads the value from it */
            add_expr(g, stmt, epi);
        }
        has_output = g->acc_depth < 0;
        break;
    }
    case LOWER_BODY_EPILOGUE:
        add_expr(g, stmt, epi);
        break;
    case LOWER_BODY_WRITEBACK:
        if (g->acc_is_final && epi) add_expr(g, stmt, epi);
        break;
    case LOWER_BODY_OUT_ZERO:
    case LOWER_BODY_ACC_LOAD:
        break;
    }
    if (has_output) {
        lowered_node *out = lowered_add(g, stmt, LOWERED_OUTPUT, &stmt->at);
        out->out = lower_out_choose(g);
        if (out->out == LOWER_OUT_LANES && stmt->body != LOWER_BODY_ACC_LOAD)
            out->temp = g->n_temps++; /* the stored vector, scattered lane by lane */
    }
    g->n_hoisted = 0;
}

/* Adds the dims of the loads under n that the statement's guard checks. */
static void add_hoisted(lower_gen *g, const lowered_node *n)
{
    for (const lowered_node *c = n->first; c; c = c->next) {
        if (c->kind == LOWERED_EXPR) add_hoisted(g, c);
        if (c->kind != LOWERED_LOAD || !c->hoisted) continue;
        RLT_ASSERT(g->n_hoisted < RLT_MAX_TENSORS);
        g->hoisted_load[g->n_hoisted] = c->expr;
        g->hoisted_dims[g->n_hoisted++] = c->hoisted;
    }
}

void lower_stmt_enter(lower_gen *g, const lowered_node *stmt)
{
    g->n_hoisted = 0;
    add_hoisted(g, stmt);
}

void lower_stmt_leave(lower_gen *g) { g->n_hoisted = 0; }
