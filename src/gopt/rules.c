/*
 * rules.c - the rule language of graph substitutions: the parser of rule
 * files (rlt_ruleset_parse, rlt_ruleset_load, the shipped set) and its
 * expressions (rlt_rexpr_eval) with their values (rlt_rvalue_*).
 *
 * A rule file is lines; '#' starts a comment. docs/graph-opt.md, "Rules",
 * is the reference:
 *
 *     # two convolutions of one input become one, split after
 *     rule merge_sibling_convs
 *       src y1 = Conv(x, w1, b1) strides=S pads=P
 *       src y2 = Conv(x, w2, b2) strides=S pads=P
 *       where const(w1), const(w2), shape(w1) == shape(w2) ...
 *       dst w = Concat(w1, w2) axis=0
 *       ...
 *       out y1 -> z1, y2 -> z2
 *       check x=f32[1,4,6,6] w1=f32[3,4,3,3] ... S=[1,1] P=[1,1,1,1]
 *     end
 *
 * Lower-case names are tensors, upper-case names attribute values.
 */
#include "gopt/gopt.h"
#include "gopt/default_rules_text.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- expressions ----------------------------------------------------------- */

typedef enum rexpr_kind { E_INT, E_FLOAT, E_STRING, E_LIST, E_VAR, E_CALL, E_BIN, E_NEG } rexpr_kind;

typedef enum rexpr_fn { F_DIM, F_RANK, F_SHAPE, F_CONST, F_PERCHANNEL, F_COUNT } rexpr_fn;
static const char *const fn_names[F_COUNT] = {"dim", "rank", "shape", "const", "perchannel"};
static const int fn_arity[F_COUNT] = {2, 1, 1, 1, 2};

struct rlt_rexpr {
    rexpr_kind kind;
    int64_t i;
    double f;
    const char *s;
    int var;                 /* E_VAR */
    rexpr_fn fn;             /* E_CALL */
    char op[3];              /* E_BIN: "+", "-", "*", "==", "!=", "<", "<=", ">", ">=" */
    int n_args;
    const rlt_rexpr **args;  /* E_LIST elements, E_CALL arguments, E_BIN/E_NEG operands */
    int line;
};

/* ---- the parser's state -------------------------------------------------------- */

typedef struct parser {
    rlt_arena *arena;
    const char *file;
    int line;
    const char *p;       /* in the current line */
    const char *end;     /* of the current line */
    rlt_rule *rule;      /* being read */
    rlt_diag *diag;
} parser;

static rlt_status perr(parser *ps, const char *fmt, ...) RLT_PRINTF(2, 3);

static rlt_status perr(parser *ps, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return rlt_fail(ps->diag, RLT_STATUS_PARSE_ERROR, "%s:%d: %s", ps->file, ps->line, msg);
}

static void skip_ws(parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\r')) ps->p++;
    if (ps->p < ps->end && *ps->p == '#') ps->p = ps->end;
}

static bool at_end(parser *ps)
{
    skip_ws(ps);
    return ps->p >= ps->end;
}

static bool accept(parser *ps, const char *tok)
{
    skip_ws(ps);
    size_t n = strlen(tok);
    if ((size_t)(ps->end - ps->p) >= n && strncmp(ps->p, tok, n) == 0) {
        ps->p += n;
        return true;
    }
    return false;
}

static bool is_ident_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static bool is_ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* An identifier into buf (cap bytes); false when there is none. */
static bool ident(parser *ps, char *buf, size_t cap)
{
    skip_ws(ps);
    if (ps->p >= ps->end || !is_ident_start(*ps->p)) return false;
    size_t n = 0;
    while (ps->p < ps->end && is_ident_char(*ps->p)) {
        if (n + 1 < cap) buf[n++] = *ps->p;
        ps->p++;
    }
    buf[n] = 0;
    return true;
}

/* The next identifier without taking it. */
static bool peek_ident(parser *ps, char *buf, size_t cap)
{
    const char *save = ps->p;
    bool ok = ident(ps, buf, cap);
    ps->p = save;
    return ok;
}

static bool is_attr_name(const char *name) { return isupper((unsigned char)name[0]); }

/* The variable of that name in the rule being read, added with `kind` when
 * new (-1 when the rule has too many). */
static int var_get(parser *ps, const char *name, rlt_rvar_kind kind, bool *is_new)
{
    rlt_rule *r = ps->rule;
    if (is_new) *is_new = false;
    for (int v = 0; v < r->n_vars; v++)
        if (strcmp(r->vars[v].name, name) == 0) return v;
    if (r->n_vars == RLT_RULE_MAX_VARS) return -1;
    const char *copy = rlt_arena_strdup(ps->arena, name);
    if (!copy) return -1;
    r->vars[r->n_vars] = (rlt_rvar){.name = copy, .kind = kind};
    if (is_new) *is_new = true;
    return r->n_vars++;
}

static int var_find(const rlt_rule *r, const char *name)
{
    for (int v = 0; v < r->n_vars; v++)
        if (strcmp(r->vars[v].name, name) == 0) return v;
    return -1;
}

static rlt_rexpr *expr_new(parser *ps, rexpr_kind kind)
{
    rlt_rexpr *e = rlt_arena_alloc(ps->arena, sizeof *e);
    if (e) {
        e->kind = kind;
        e->line = ps->line;
        e->var = -1;
    }
    return e;
}

#define OOM(ps) rlt_fail((ps)->diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading rules")

static rlt_status parse_expr(parser *ps, const rlt_rexpr **out);

/* A comma-separated list of expressions up to `close`. */
static rlt_status parse_args(parser *ps, char close, const rlt_rexpr ***out, int *n_out)
{
    const rlt_rexpr *items[RLT_RVALUE_MAX];
    int n = 0;
    char closing[2] = {close, 0};
    if (!accept(ps, closing)) {
        for (;;) {
            if (n == RLT_RVALUE_MAX) return perr(ps, "more than %d items in a list", RLT_RVALUE_MAX);
            rlt_status st = parse_expr(ps, &items[n++]);
            if (st != RLT_STATUS_OK) return st;
            if (accept(ps, closing)) break;
            if (!accept(ps, ",")) return perr(ps, "expected ',' or '%c' in a list", close);
        }
    }
    const rlt_rexpr **args = rlt_arena_alloc(ps->arena, (size_t)n * sizeof *args + 1);
    if (!args) return OOM(ps);
    if (n) memcpy(args, items, (size_t)n * sizeof *args);
    *out = args;
    *n_out = n;
    return RLT_STATUS_OK;
}

static rlt_status parse_primary(parser *ps, const rlt_rexpr **out)
{
    skip_ws(ps);
    if (ps->p >= ps->end) return perr(ps, "expected a value at the end of the line");
    char c = *ps->p;
    rlt_rexpr *e;
    if (c == '(') {
        ps->p++;
        rlt_status st = parse_expr(ps, out);
        if (st != RLT_STATUS_OK) return st;
        return accept(ps, ")") ? RLT_STATUS_OK : perr(ps, "expected ')'");
    }
    if (c == '[') {
        ps->p++;
        if (!(e = expr_new(ps, E_LIST))) return OOM(ps);
        rlt_status st = parse_args(ps, ']', &e->args, &e->n_args);
        *out = e;
        return st;
    }
    if (c == '"') {
        const char *q = memchr(ps->p + 1, '"', (size_t)(ps->end - ps->p - 1));
        if (!q) return perr(ps, "a string is not closed");
        if (!(e = expr_new(ps, E_STRING))) return OOM(ps);
        char *s = rlt_arena_alloc(ps->arena, (size_t)(q - ps->p));
        if (!s) return OOM(ps);
        memcpy(s, ps->p + 1, (size_t)(q - ps->p - 1));
        e->s = s;
        ps->p = q + 1;
        *out = e;
        return RLT_STATUS_OK;
    }
    if (isdigit((unsigned char)c) || (c == '.' && ps->p + 1 < ps->end && isdigit((unsigned char)ps->p[1]))) {
        const char *q = ps->p;
        bool is_float = false;
        while (q < ps->end && (isalnum((unsigned char)*q) || *q == '.' ||
                               ((*q == '-' || *q == '+') && (q[-1] == 'e' || q[-1] == 'E')))) {
            if (*q == '.' || *q == 'e' || *q == 'E') is_float = true;
            q++;
        }
        char num[64];
        size_t n = (size_t)(q - ps->p);
        if (n >= sizeof num) return perr(ps, "a number is too long");
        memcpy(num, ps->p, n);
        num[n] = 0;
        char *endp;
        errno = 0;
        if (!(e = expr_new(ps, is_float ? E_FLOAT : E_INT))) return OOM(ps);
        if (is_float)
            e->f = strtod(num, &endp);
        else
            e->i = strtoll(num, &endp, 10);
        if (*endp || errno) return perr(ps, "'%s' is not a number", num);
        ps->p = q;
        *out = e;
        return RLT_STATUS_OK;
    }
    char name[64];
    if (!ident(ps, name, sizeof name)) return perr(ps, "unexpected '%c'", c);
    if (accept(ps, "(")) {
        int fn = 0;
        while (fn < F_COUNT && strcmp(fn_names[fn], name) != 0) fn++;
        if (fn == F_COUNT)
            return perr(ps, "unknown function '%s'; expected dim, rank, shape, const or perchannel", name);
        if (!(e = expr_new(ps, E_CALL))) return OOM(ps);
        e->fn = (rexpr_fn)fn;
        rlt_status st = parse_args(ps, ')', &e->args, &e->n_args);
        if (st != RLT_STATUS_OK) return st;
        if (e->n_args != fn_arity[fn])
            return perr(ps, "%s() takes %d argument%s, got %d", name, fn_arity[fn], fn_arity[fn] == 1 ? "" : "s",
                        e->n_args);
        if (e->args[0]->kind != E_VAR || is_attr_name(ps->rule->vars[e->args[0]->var].name))
            return perr(ps, "the first argument of %s() must be a tensor", name);
        if (fn == F_PERCHANNEL && (e->args[1]->kind != E_VAR || is_attr_name(ps->rule->vars[e->args[1]->var].name)))
            return perr(ps, "the second argument of perchannel() must be a tensor");
        *out = e;
        return RLT_STATUS_OK;
    }
    int v = var_find(ps->rule, name);
    if (v < 0) return perr(ps, "'%s' is not defined before this line", name);
    if (!(e = expr_new(ps, E_VAR))) return OOM(ps);
    e->var = v;
    *out = e;
    return RLT_STATUS_OK;
}

static rlt_status parse_unary(parser *ps, const rlt_rexpr **out)
{
    if (accept(ps, "-")) {
        rlt_rexpr *e = expr_new(ps, E_NEG);
        if (!e || !(e->args = rlt_arena_alloc(ps->arena, sizeof *e->args))) return OOM(ps);
        e->n_args = 1;
        *out = e;
        return parse_unary(ps, &e->args[0]);
    }
    return parse_primary(ps, out);
}

static rlt_status binary(parser *ps, const char *op, const rlt_rexpr *a, const rlt_rexpr *b, const rlt_rexpr **out)
{
    rlt_rexpr *e = expr_new(ps, E_BIN);
    if (!e || !(e->args = rlt_arena_alloc(ps->arena, 2 * sizeof *e->args))) return OOM(ps);
    snprintf(e->op, sizeof e->op, "%s", op);
    e->n_args = 2;
    e->args[0] = a;
    e->args[1] = b;
    *out = e;
    return RLT_STATUS_OK;
}

static rlt_status parse_term(parser *ps, const rlt_rexpr **out)
{
    rlt_status st = parse_unary(ps, out);
    while (st == RLT_STATUS_OK && accept(ps, "*")) {
        const rlt_rexpr *b;
        if ((st = parse_unary(ps, &b)) == RLT_STATUS_OK) st = binary(ps, "*", *out, b, out);
    }
    return st;
}

static rlt_status parse_sum(parser *ps, const rlt_rexpr **out)
{
    rlt_status st = parse_term(ps, out);
    for (;;) {
        if (st != RLT_STATUS_OK) return st;
        skip_ws(ps);
        if (ps->p < ps->end && (*ps->p == '+' || (*ps->p == '-' && !(ps->p + 1 < ps->end && ps->p[1] == '>')))) {
            char op[2] = {*ps->p++, 0};
            const rlt_rexpr *b;
            if ((st = parse_term(ps, &b)) == RLT_STATUS_OK) st = binary(ps, op, *out, b, out);
        } else {
            return RLT_STATUS_OK;
        }
    }
}

static rlt_status parse_expr(parser *ps, const rlt_rexpr **out)
{
    rlt_status st = parse_sum(ps, out);
    if (st != RLT_STATUS_OK) return st;
    static const char *const ops[] = {"==", "!=", "<=", ">=", "<", ">"};
    for (size_t k = 0; k < RLT_ARRAY_LEN(ops); k++) {
        if (accept(ps, ops[k])) {
            const rlt_rexpr *b;
            if ((st = parse_sum(ps, &b)) != RLT_STATUS_OK) return st;
            return binary(ps, ops[k], *out, b, out);
        }
    }
    return RLT_STATUS_OK;
}

/* ---- values ------------------------------------------------------------------- */

void rlt_rvalue_of_attr(const rlt_graph_attr *a, rlt_rvalue *out)
{
    memset(out, 0, sizeof *out);
    if (!a) {
        out->is_none = true;
        return;
    }
    out->kind = a->kind;
    switch (a->kind) {
    case RLT_GRAPH_ATTR_INT: out->i = a->i; break;
    case RLT_GRAPH_ATTR_FLOAT: out->f = a->f; break;
    case RLT_GRAPH_ATTR_STRING: out->s = a->s; break;
    case RLT_GRAPH_ATTR_INTS:
        out->n = a->n_values < RLT_RVALUE_MAX ? a->n_values : RLT_RVALUE_MAX;
        for (int k = 0; k < out->n; k++) out->ints[k] = a->ints[k];
        if (a->n_values > RLT_RVALUE_MAX) out->is_none = true; /* too long to compare: matches nothing */
        break;
    case RLT_GRAPH_ATTR_FLOATS:
        out->n = a->n_values < RLT_RVALUE_MAX ? a->n_values : RLT_RVALUE_MAX;
        for (int k = 0; k < out->n; k++) out->floats[k] = a->floats[k];
        if (a->n_values > RLT_RVALUE_MAX) out->is_none = true;
        break;
    default: out->is_none = true; break; /* tensors are not compared */
    }
}

bool rlt_rvalue_to_attr(const rlt_rvalue *v, const char *name, rlt_arena *arena, rlt_graph_attr *out)
{
    if (v->is_none) return false;
    *out = (rlt_graph_attr){.name = rlt_arena_strdup(arena, name), .kind = v->kind};
    if (!out->name) return false;
    switch (v->kind) {
    case RLT_GRAPH_ATTR_INT: out->i = v->i; return true;
    case RLT_GRAPH_ATTR_FLOAT: out->f = (float)v->f; return true;
    case RLT_GRAPH_ATTR_STRING: return (out->s = rlt_arena_strdup(arena, v->s)) != NULL;
    case RLT_GRAPH_ATTR_INTS: {
        int64_t *ints = rlt_arena_alloc(arena, (size_t)v->n * sizeof *ints + 1);
        if (!ints) return false;
        for (int k = 0; k < v->n; k++) ints[k] = v->ints[k];
        out->ints = ints;
        out->n_values = v->n;
        return true;
    }
    case RLT_GRAPH_ATTR_FLOATS: {
        float *fl = rlt_arena_alloc(arena, (size_t)v->n * sizeof *fl + 1);
        if (!fl) return false;
        for (int k = 0; k < v->n; k++) fl[k] = (float)v->floats[k];
        out->floats = fl;
        out->n_values = v->n;
        return true;
    }
    default: return false;
    }
}

bool rlt_rvalue_equal(const rlt_rvalue *a, const rlt_rvalue *b)
{
    if (a->is_none || b->is_none) return a->is_none && b->is_none;
    bool a_num = a->kind == RLT_GRAPH_ATTR_INT || a->kind == RLT_GRAPH_ATTR_FLOAT;
    bool b_num = b->kind == RLT_GRAPH_ATTR_INT || b->kind == RLT_GRAPH_ATTR_FLOAT;
    if (a_num && b_num) {
        if (a->kind == RLT_GRAPH_ATTR_INT && b->kind == RLT_GRAPH_ATTR_INT) return a->i == b->i;
        double x = a->kind == RLT_GRAPH_ATTR_INT ? (double)a->i : a->f;
        double y = b->kind == RLT_GRAPH_ATTR_INT ? (double)b->i : b->f;
        return (float)x == (float)y; /* attributes hold floats */
    }
    bool a_list = a->kind == RLT_GRAPH_ATTR_INTS || a->kind == RLT_GRAPH_ATTR_FLOATS;
    bool b_list = b->kind == RLT_GRAPH_ATTR_INTS || b->kind == RLT_GRAPH_ATTR_FLOATS;
    if (a_list && b_list) {
        if (a->n != b->n) return false;
        for (int k = 0; k < a->n; k++) {
            double x = a->kind == RLT_GRAPH_ATTR_INTS ? (double)a->ints[k] : a->floats[k];
            double y = b->kind == RLT_GRAPH_ATTR_INTS ? (double)b->ints[k] : b->floats[k];
            if ((float)x != (float)y) return false;
        }
        return true;
    }
    if (a->kind == RLT_GRAPH_ATTR_STRING && b->kind == RLT_GRAPH_ATTR_STRING) return strcmp(a->s, b->s) == 0;
    return false;
}

void rlt_rvalue_format(const rlt_rvalue *v, char *buf, size_t cap)
{
    rlt_str s;
    rlt_str_init(&s);
    if (v->is_none) {
        rlt_str_append(&s, "none");
    } else {
        switch (v->kind) {
        case RLT_GRAPH_ATTR_INT: rlt_str_printf(&s, "%" PRId64, v->i); break;
        case RLT_GRAPH_ATTR_FLOAT: rlt_str_printf(&s, "%.9g", v->f); break;
        case RLT_GRAPH_ATTR_STRING: rlt_str_printf(&s, "\"%s\"", v->s); break;
        case RLT_GRAPH_ATTR_INTS:
        case RLT_GRAPH_ATTR_FLOATS:
            rlt_str_append(&s, "[");
            for (int k = 0; k < v->n; k++) {
                if (v->kind == RLT_GRAPH_ATTR_INTS)
                    rlt_str_printf(&s, "%s%" PRId64, k ? "," : "", v->ints[k]);
                else
                    rlt_str_printf(&s, "%s%.9g", k ? "," : "", v->floats[k]);
            }
            rlt_str_append(&s, "]");
            break;
        default: rlt_str_append(&s, "?"); break;
        }
    }
    snprintf(buf, cap, "%s", s.data ? s.data : "");
    rlt_str_free(&s);
}

/* ---- evaluation ----------------------------------------------------------------- */

static rlt_status eval_fail(const rlt_rexpr *e, const rlt_reval *c, rlt_diag *diag, const char *what)
{
    const rlt_rule *r = c->rule;
    return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s:%d: rule %s: %s", r ? r->file : "?", e->line,
                    r ? r->name : "?", what);
}

static void set_int(rlt_rvalue *v, int64_t i)
{
    memset(v, 0, sizeof *v);
    v->kind = RLT_GRAPH_ATTR_INT;
    v->i = i;
}

static bool is_num(const rlt_rvalue *v)
{
    return !v->is_none && (v->kind == RLT_GRAPH_ATTR_INT || v->kind == RLT_GRAPH_ATTR_FLOAT);
}

static double num(const rlt_rvalue *v) { return v->kind == RLT_GRAPH_ATTR_INT ? (double)v->i : v->f; }

/* The graph tensor bound to the variable of e (an E_VAR), or NULL. */
static const rlt_graph_tensor *bound_tensor(const rlt_rexpr *e, const rlt_reval *c)
{
    if (e->kind != E_VAR || !c->tensors || !c->g) return NULL;
    int t = c->tensors[e->var];
    return t >= 0 ? &c->g->tensors[t] : NULL;
}

static rlt_status eval_call(const rlt_rexpr *e, const rlt_reval *c, rlt_rvalue *out, rlt_diag *diag)
{
    const rlt_graph_tensor *t = bound_tensor(e->args[0], c);
    if (!t) return eval_fail(e, c, diag, "a function's tensor is not bound here");
    switch (e->fn) {
    case F_DIM: {
        rlt_rvalue i;
        rlt_status st = rlt_rexpr_eval(e->args[1], c, &i, diag);
        if (st != RLT_STATUS_OK) return st;
        if (i.is_none || i.kind != RLT_GRAPH_ATTR_INT) return eval_fail(e, c, diag, "dim() needs an integer axis");
        int64_t a = i.i < 0 ? i.i + t->rank : i.i;
        if (a < 0 || a >= t->rank) {
            /* out of range: the condition fails rather than the rule */
            memset(out, 0, sizeof *out);
            out->is_none = true;
            return RLT_STATUS_OK;
        }
        set_int(out, t->dims[a]);
        return RLT_STATUS_OK;
    }
    case F_RANK: set_int(out, t->rank); return RLT_STATUS_OK;
    case F_SHAPE:
        memset(out, 0, sizeof *out);
        out->kind = RLT_GRAPH_ATTR_INTS;
        out->n = t->rank;
        for (int k = 0; k < t->rank; k++) out->ints[k] = t->dims[k];
        return RLT_STATUS_OK;
    case F_CONST: set_int(out, t->data != NULL); return RLT_STATUS_OK;
    case F_PERCHANNEL: {
        const rlt_graph_tensor *y = bound_tensor(e->args[1], c);
        if (!y) return eval_fail(e, c, diag, "perchannel()'s second tensor is not bound here");
        set_int(out, y->rank >= 2 && rlt_graph_is_per_channel(t, y, 1));
        return RLT_STATUS_OK;
    }
    default: return eval_fail(e, c, diag, "unknown function");
    }
}

static rlt_status eval_bin(const rlt_rexpr *e, const rlt_reval *c, rlt_rvalue *out, rlt_diag *diag)
{
    rlt_rvalue a, b;
    rlt_status st = rlt_rexpr_eval(e->args[0], c, &a, diag);
    if (st == RLT_STATUS_OK) st = rlt_rexpr_eval(e->args[1], c, &b, diag);
    if (st != RLT_STATUS_OK) return st;
    const char *op = e->op;
    if (op[0] == '=' || op[0] == '!') {
        bool eq = rlt_rvalue_equal(&a, &b);
        set_int(out, op[0] == '=' ? eq : !eq);
        return RLT_STATUS_OK;
    }
    if (a.is_none || b.is_none) { /* a value that is not there compares false, sums to none */
        memset(out, 0, sizeof *out);
        if (op[0] == '<' || op[0] == '>')
            set_int(out, 0);
        else
            out->is_none = true;
        return RLT_STATUS_OK;
    }
    if (!is_num(&a) || !is_num(&b)) return eval_fail(e, c, diag, "arithmetic and order need numbers");
    bool is_int = a.kind == RLT_GRAPH_ATTR_INT && b.kind == RLT_GRAPH_ATTR_INT;
    double x = num(&a), y = num(&b);
    if (op[0] == '<' || op[0] == '>') {
        bool r = op[0] == '<' ? (op[1] == '=' ? x <= y : x < y) : (op[1] == '=' ? x >= y : x > y);
        set_int(out, r);
        return RLT_STATUS_OK;
    }
    if (is_int) {
        int64_t r = op[0] == '+' ? a.i + b.i : op[0] == '-' ? a.i - b.i : a.i * b.i;
        set_int(out, r);
        return RLT_STATUS_OK;
    }
    memset(out, 0, sizeof *out);
    out->kind = RLT_GRAPH_ATTR_FLOAT;
    out->f = op[0] == '+' ? x + y : op[0] == '-' ? x - y : x * y;
    return RLT_STATUS_OK;
}

rlt_status rlt_rexpr_eval(const rlt_rexpr *e, const rlt_reval *c, rlt_rvalue *out, rlt_diag *diag)
{
    memset(out, 0, sizeof *out);
    switch (e->kind) {
    case E_INT: set_int(out, e->i); return RLT_STATUS_OK;
    case E_FLOAT:
        out->kind = RLT_GRAPH_ATTR_FLOAT;
        out->f = e->f;
        return RLT_STATUS_OK;
    case E_STRING:
        out->kind = RLT_GRAPH_ATTR_STRING;
        out->s = e->s;
        return RLT_STATUS_OK;
    case E_LIST: {
        bool is_float = false;
        rlt_rvalue item;
        out->kind = RLT_GRAPH_ATTR_INTS;
        out->n = e->n_args;
        for (int k = 0; k < e->n_args; k++) {
            rlt_status st = rlt_rexpr_eval(e->args[k], c, &item, diag);
            if (st != RLT_STATUS_OK) return st;
            if (item.is_none) {
                out->is_none = true;
                return RLT_STATUS_OK;
            }
            if (!is_num(&item)) return eval_fail(e, c, diag, "a list holds numbers only");
            if (item.kind == RLT_GRAPH_ATTR_FLOAT) is_float = true;
            /* a float list's ints are unused, but the cast of a float out
             * of int64's range (or NaN) is undefined: those read as 0 */
            bool is_in_range = item.f > -9.2e18 && item.f < 9.2e18;
            out->ints[k] = item.kind == RLT_GRAPH_ATTR_INT ? item.i : is_in_range ? (int64_t)item.f : 0;
            out->floats[k] = num(&item);
        }
        if (is_float) out->kind = RLT_GRAPH_ATTR_FLOATS;
        return RLT_STATUS_OK;
    }
    case E_VAR: {
        const rlt_rvar *v = &c->rule->vars[e->var];
        if (v->kind != RLT_RVAR_ATTR) return eval_fail(e, c, diag, "a tensor is not a value; use dim(), shape(), ...");
        if (c->attrs)
            *out = c->attrs[e->var];
        else
            out->is_none = true;
        return RLT_STATUS_OK;
    }
    case E_CALL: return eval_call(e, c, out, diag);
    case E_BIN: return eval_bin(e, c, out, diag);
    case E_NEG: {
        rlt_status st = rlt_rexpr_eval(e->args[0], c, out, diag);
        if (st != RLT_STATUS_OK || out->is_none) return st;
        if (out->kind == RLT_GRAPH_ATTR_INT)
            out->i = -out->i;
        else if (out->kind == RLT_GRAPH_ATTR_FLOAT)
            out->f = -out->f;
        else
            return eval_fail(e, c, diag, "'-' needs a number");
        return RLT_STATUS_OK;
    }
    }
    return eval_fail(e, c, diag, "unknown expression");
}

/* True for expressions made of literals only. */
static bool is_literal(const rlt_rexpr *e)
{
    if (e->kind == E_VAR || e->kind == E_CALL) return false;
    for (int k = 0; k < e->n_args; k++)
        if (!is_literal(e->args[k])) return false;
    return true;
}

/* ---- statements ------------------------------------------------------------------ */

static rlt_dtype dtype_named(const char *name, bool *ok)
{
    *ok = true;
    for (int d = 0; d < RLT_DTYPE_COUNT; d++)
        if (strcmp(rlt_dtype_str((rlt_dtype)d), name) == 0) return (rlt_dtype)d;
    *ok = false;
    return RLT_DTYPE_FLOAT32;
}

/* "src OUTS = OP(ARGS) ATTRS" or "dst ...", after the keyword. */
static rlt_status parse_node(parser *ps, bool is_src)
{
    rlt_rule *r = ps->rule;
    int *count = is_src ? &r->n_src : &r->n_dst;
    if (*count == RLT_RULE_MAX_NODES) return perr(ps, "more than %d nodes on one side", RLT_RULE_MAX_NODES);
    if (!is_src && r->n_src == 0) return perr(ps, "the target (dst) comes after the source (src)");
    rlt_rnode *n = &(is_src ? r->src : r->dst)[*count];
    memset(n, 0, sizeof *n);
    n->line = ps->line;
    int outs[16];
    char name[64];
    for (;;) {
        if (!ident(ps, name, sizeof name)) return perr(ps, "expected the node's output names");
        if (is_attr_name(name)) return perr(ps, "a tensor name starts in lower case: '%s'", name);
        if (n->n_outputs == 16) return perr(ps, "more than 16 outputs");
        bool is_new;
        int v = var_get(ps, name, is_src ? RLT_RVAR_SRC : RLT_RVAR_DST, &is_new);
        if (v < 0) return perr(ps, "more than %d names in one rule", RLT_RULE_MAX_VARS);
        if (!is_new) return perr(ps, "'%s' is written twice or read before it is written", name);
        outs[n->n_outputs++] = v;
        if (accept(ps, "=")) break;
        if (!accept(ps, ",")) return perr(ps, "expected ',' or '=' after an output name");
    }
    if (!(n->outputs = rlt_arena_alloc(ps->arena, (size_t)n->n_outputs * sizeof *n->outputs))) return OOM(ps);
    memcpy(n->outputs, outs, (size_t)n->n_outputs * sizeof *outs);
    if (!ident(ps, name, sizeof name)) return perr(ps, "expected an op type after '='");
    if (!(n->op_type = rlt_arena_strdup(ps->arena, name))) return OOM(ps);
    if (!accept(ps, "(")) return perr(ps, "expected '(' after %s", name);
    rlt_roperand ins[16];
    if (!accept(ps, ")")) {
        for (;;) {
            if (n->n_inputs == 16) return perr(ps, "more than 16 inputs");
            rlt_roperand *o = &ins[n->n_inputs++];
            *o = (rlt_roperand){.var = -1};
            if (!ident(ps, name, sizeof name)) return perr(ps, "expected an input name");
            bool is_dtype;
            rlt_dtype dt = dtype_named(name, &is_dtype);
            if (is_dtype && accept(ps, "(")) {
                if (is_src) return perr(ps, "a source node reads tensors, not literals");
                o->dtype = dt;
                const rlt_rexpr *lit;
                rlt_status st = parse_expr(ps, &lit);
                if (st != RLT_STATUS_OK) return st;
                if (!is_literal(lit) && lit->kind != E_LIST && lit->kind != E_VAR && lit->kind != E_CALL &&
                    lit->kind != E_BIN && lit->kind != E_NEG)
                    return perr(ps, "expected a value in %s(...)", name);
                o->literal = lit;
                if (!accept(ps, ")")) return perr(ps, "expected ')' after the literal");
            } else {
                if (is_attr_name(name)) return perr(ps, "'%s' is an attribute value, not a tensor", name);
                int v = var_find(r, name);
                if (is_src) {
                    if (v < 0) v = var_get(ps, name, RLT_RVAR_INPUT, NULL);
                    if (v < 0) return perr(ps, "more than %d names in one rule", RLT_RULE_MAX_VARS);
                } else {
                    if (v < 0) return perr(ps, "'%s' is not a pattern input or an earlier target tensor", name);
                    if (r->vars[v].kind == RLT_RVAR_SRC)
                        return perr(ps, "the target cannot read '%s': the source nodes that write it are removed",
                                    name);
                }
                o->var = v;
            }
            if (accept(ps, ")")) break;
            if (!accept(ps, ",")) return perr(ps, "expected ',' or ')' in the inputs");
        }
    }
    if (n->n_inputs && !(n->inputs = rlt_arena_alloc(ps->arena, (size_t)n->n_inputs * sizeof *n->inputs)))
        return OOM(ps);
    if (n->n_inputs) memcpy(n->inputs, ins, (size_t)n->n_inputs * sizeof *ins);
    rlt_rattr attrs[24];
    while (!at_end(ps)) {
        if (n->n_attrs == 24) return perr(ps, "more than 24 attributes");
        rlt_rattr *a = &attrs[n->n_attrs++];
        *a = (rlt_rattr){.var = -1};
        if (!ident(ps, name, sizeof name)) return perr(ps, "expected an attribute name=value");
        if (!(a->name = rlt_arena_strdup(ps->arena, name))) return OOM(ps);
        if (!accept(ps, "=")) return perr(ps, "expected '=' after attribute %s", name);
        char vname[64];
        if (is_src && peek_ident(ps, vname, sizeof vname) && is_attr_name(vname)) {
            ident(ps, vname, sizeof vname);
            int v = var_get(ps, vname, RLT_RVAR_ATTR, NULL);
            if (v < 0) return perr(ps, "more than %d names in one rule", RLT_RULE_MAX_VARS);
            a->var = v;
            rlt_rexpr *e = expr_new(ps, E_VAR);
            if (!e) return OOM(ps);
            e->var = v;
            a->value = e;
            continue;
        }
        rlt_status st = parse_expr(ps, &a->value);
        if (st != RLT_STATUS_OK) return st;
        if (is_src) {
            if (!is_literal(a->value))
                return perr(ps, "a source attribute is a literal or one upper-case name (bind it, then use where)");
            rlt_rvalue *lit = rlt_arena_alloc(ps->arena, sizeof *lit);
            if (!lit) return OOM(ps);
            if ((st = rlt_rexpr_eval(a->value, &(rlt_reval){.rule = r}, lit, ps->diag)) != RLT_STATUS_OK) return st;
            a->literal = lit;
        }
    }
    if (n->n_attrs && !(n->attrs = rlt_arena_alloc(ps->arena, (size_t)n->n_attrs * sizeof *n->attrs)))
        return OOM(ps);
    if (n->n_attrs) memcpy(n->attrs, attrs, (size_t)n->n_attrs * sizeof *attrs);
    (*count)++;
    return RLT_STATUS_OK;
}

static rlt_status parse_where(parser *ps)
{
    rlt_rule *r = ps->rule;
    for (;;) {
        const rlt_rexpr *e;
        rlt_status st = parse_expr(ps, &e);
        if (st != RLT_STATUS_OK) return st;
        const rlt_rexpr **w = rlt_arena_alloc(ps->arena, ((size_t)r->n_where + 1) * sizeof *w);
        if (!w) return OOM(ps);
        if (r->n_where) memcpy(w, r->where, (size_t)r->n_where * sizeof *w);
        w[r->n_where++] = e;
        r->where = w;
        if (e->kind == E_CALL && e->fn == F_CONST && r->vars[e->args[0]->var].kind == RLT_RVAR_INPUT)
            r->vars[e->args[0]->var].is_const = true;
        if (at_end(ps)) return RLT_STATUS_OK;
        if (!accept(ps, ",")) return perr(ps, "expected ',' between conditions");
    }
}

static rlt_status parse_out(parser *ps)
{
    rlt_rule *r = ps->rule;
    for (;;) {
        char a[64], b[64];
        if (!ident(ps, a, sizeof a) || !accept(ps, "->") || !ident(ps, b, sizeof b))
            return perr(ps, "expected SOURCE -> TARGET");
        int va = var_find(r, a), vb = var_find(r, b);
        if (va < 0 || r->vars[va].kind != RLT_RVAR_SRC)
            return perr(ps, "'%s' is not a tensor the source nodes write", a);
        if (vb < 0 || (r->vars[vb].kind != RLT_RVAR_DST && r->vars[vb].kind != RLT_RVAR_INPUT))
            return perr(ps, "'%s' is not a target tensor or a pattern input", b);
        for (int k = 0; k < r->n_out; k++)
            if (r->out_src[k] == va) return perr(ps, "'%s' is replaced twice", a);
        if (r->n_out == (int)RLT_ARRAY_LEN(r->out_src)) return perr(ps, "too many replaced tensors");
        r->out_src[r->n_out] = va;
        r->out_dst[r->n_out++] = vb;
        if (at_end(ps)) return RLT_STATUS_OK;
        if (!accept(ps, ",")) return perr(ps, "expected ',' between replacements");
    }
}

static rlt_status parse_check(parser *ps)
{
    rlt_rule *r = ps->rule;
    if (r->n_checks == RLT_RULE_MAX_CHECKS) return perr(ps, "more than %d checks", RLT_RULE_MAX_CHECKS);
    rlt_rcheck *c = &r->checks[r->n_checks];
    rlt_rcheck_value vals[RLT_RULE_MAX_VARS];
    int n = 0;
    c->line = ps->line;
    while (!at_end(ps)) {
        char name[64];
        if (!ident(ps, name, sizeof name) || !accept(ps, "=")) return perr(ps, "expected NAME=VALUE");
        int v = var_find(r, name);
        if (v < 0 || (r->vars[v].kind != RLT_RVAR_INPUT && r->vars[v].kind != RLT_RVAR_ATTR))
            return perr(ps, "'%s' is not a pattern input or an attribute value of the source", name);
        for (int k = 0; k < n; k++)
            if (vals[k].var == v) return perr(ps, "'%s' is given twice", name);
        if (n == RLT_RULE_MAX_VARS) return perr(ps, "too many values");
        rlt_rcheck_value *cv = &vals[n++];
        memset(cv, 0, sizeof *cv);
        cv->var = v;
        if (r->vars[v].kind == RLT_RVAR_ATTR) {
            rlt_status st = parse_expr(ps, &cv->value);
            if (st != RLT_STATUS_OK) return st;
            if (!is_literal(cv->value)) return perr(ps, "%s must be a literal", name);
            continue;
        }
        cv->lo = -3;
        cv->hi = 3;
        char tname[16];
        bool ok;
        if (!ident(ps, tname, sizeof tname) || (cv->dtype = dtype_named(tname, &ok), !ok) || !accept(ps, "["))
            return perr(ps, "expected TYPE[DIMS] for %s (f32[1,4,8,8])", name);
        if (!accept(ps, "]")) {
            for (;;) {
                skip_ws(ps);
                char *endp;
                long long d = strtoll(ps->p, &endp, 10);
                if (endp == ps->p || d < 0 || d > 4096) return perr(ps, "a dimension of %s is not 0..4096", name);
                if (cv->rank == RLT_GRAPH_MAX_RANK) return perr(ps, "%s has too many dimensions", name);
                cv->dims[cv->rank++] = d;
                ps->p = endp;
                if (accept(ps, "]")) break;
                if (!accept(ps, ",")) return perr(ps, "expected ',' or ']' in %s's shape", name);
            }
        }
        if (accept(ps, "{")) {
            skip_ws(ps);
            char *endp;
            cv->lo = (double)strtoll(ps->p, &endp, 10);
            if (endp == ps->p) return perr(ps, "expected {LO..HI} after %s's shape", name);
            ps->p = endp;
            if (!accept(ps, "..")) return perr(ps, "expected {LO..HI} after %s's shape", name);
            skip_ws(ps);
            cv->hi = (double)strtoll(ps->p, &endp, 10);
            if (endp == ps->p || cv->hi < cv->lo) return perr(ps, "expected {LO..HI}, LO <= HI, for %s", name);
            if (cv->lo < -RLT_RULE_MAX_VALUE || cv->hi > RLT_RULE_MAX_VALUE)
                return perr(ps, "%s's values must lie within -%d..%d", name, RLT_RULE_MAX_VALUE, RLT_RULE_MAX_VALUE);
            ps->p = endp;
            if (!accept(ps, "}")) return perr(ps, "expected '}' after %s's value range", name);
        }
    }
    for (int v = 0; v < r->n_vars; v++) {
        if (r->vars[v].kind != RLT_RVAR_INPUT) continue;
        bool has = false;
        for (int k = 0; k < n; k++) has |= vals[k].var == v;
        if (!has) return perr(ps, "the check gives no shape for input '%s'", r->vars[v].name);
    }
    if (!(c->values = rlt_arena_alloc(ps->arena, (size_t)n * sizeof *c->values + 1))) return OOM(ps);
    memcpy(c->values, vals, (size_t)n * sizeof *vals);
    c->n_values = n;
    r->n_checks++;
    return RLT_STATUS_OK;
}

/* The rule is whole: every target tensor is used, replacements cover what
 * they must, a check exists. */
static rlt_status rule_finish(parser *ps)
{
    rlt_rule *r = ps->rule;
    if (r->n_src == 0) return perr(ps, "rule %s has no source (src) node", r->name);
    if (r->n_out == 0) return perr(ps, "rule %s replaces nothing (no out line)", r->name);
    if (r->n_checks == 0) return perr(ps, "rule %s has no check line: give the shapes it is verified on", r->name);
    for (int k = 0; k < r->n_src; k++)
        for (int i = 0; i < r->src[k].n_inputs; i++) {
            int v = r->src[k].inputs[i].var;
            /* a source node reading a later node's output would be a cycle in the pattern */
            for (int j = k; j < r->n_src; j++)
                for (int o = 0; o < r->src[j].n_outputs; o++)
                    if (r->src[j].outputs[o] == v)
                        return rlt_fail(ps->diag, RLT_STATUS_PARSE_ERROR,
                                        "%s:%d: rule %s: a source node reads '%s' before it is written", ps->file,
                                        r->src[k].line, r->name, r->vars[v].name);
        }
    return RLT_STATUS_OK;
}

static rlt_status ruleset_grow(rlt_ruleset *rs)
{
    if (rs->n_rules < rs->cap_rules) return RLT_STATUS_OK;
    int cap = rs->cap_rules ? 2 * rs->cap_rules : 32;
    rlt_rule **rules = rlt_realloc(rs->rules, (size_t)cap * sizeof *rules);
    if (!rules) return RLT_STATUS_OUT_OF_MEMORY;
    rs->rules = rules;
    rs->cap_rules = cap;
    return RLT_STATUS_OK;
}

rlt_status rlt_ruleset_parse(const char *text, const char *file, rlt_ruleset **rs_io, rlt_diag *diag)
{
    rlt_ruleset *rs = *rs_io;
    bool is_created = false;
    if (!rs) {
        if (!(rs = rlt_calloc(1, sizeof *rs)) || !(rs->arena = rlt_arena_create())) {
            rlt_free(rs);
            return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading rules");
        }
        is_created = true;
    }
    int n_before = rs->n_rules;
    parser ps = {.arena = rs->arena, .file = rlt_arena_strdup(rs->arena, file ? file : "rules"), .diag = diag};
    rlt_str doc;
    rlt_str_init(&doc);
    rlt_status st = RLT_STATUS_OK;
    if (!ps.file) st = OOM(&ps);
    const char *p = text;
    while (st == RLT_STATUS_OK && *p) {
        const char *eol = strchr(p, '\n');
        if (!eol) eol = p + strlen(p);
        ps.line++;
        ps.p = p;
        ps.end = eol;
        p = *eol ? eol + 1 : eol;
        const char *b = ps.p;
        while (b < ps.end && (*b == ' ' || *b == '\t')) b++;
        char kw[16];
        if (at_end(&ps)) {
            /* blank or comment: comment lines right above a rule document it */
            if (!ps.rule && b < ps.end && *b == '#') {
                b++;
                while (b < ps.end && *b == ' ') b++;
                if (doc.len) rlt_str_append(&doc, " ");
                rlt_str_appendn(&doc, b, (size_t)(ps.end - b));
            } else if (!ps.rule) {
                rlt_str_clear(&doc);
            }
            continue;
        }
        if (!ident(&ps, kw, sizeof kw)) {
            st = perr(&ps, "expected rule, src, dst, where, out, check or end");
            break;
        }
        if (strcmp(kw, "rule") == 0) {
            char name[64];
            if (ps.rule) {
                st = perr(&ps, "rule %s is not closed by 'end'", ps.rule->name);
                break;
            }
            if (!ident(&ps, name, sizeof name) || !at_end(&ps)) {
                st = perr(&ps, "expected 'rule NAME'");
                break;
            }
            if (rlt_ruleset_find(rs, name)) {
                st = perr(&ps, "rule %s is defined twice", name);
                break;
            }
            if (ruleset_grow(rs) != RLT_STATUS_OK || !(ps.rule = rlt_arena_alloc(rs->arena, sizeof *ps.rule))) {
                st = OOM(&ps);
                break;
            }
            ps.rule->name = rlt_arena_strdup(rs->arena, name);
            ps.rule->doc = rlt_arena_strdup(rs->arena, doc.data ? doc.data : "");
            ps.rule->file = ps.file;
            ps.rule->line = ps.line;
            rlt_str_clear(&doc);
            if (!ps.rule->name || !ps.rule->doc) st = OOM(&ps);
            continue;
        }
        if (!ps.rule) {
            st = perr(&ps, "'%s' outside a rule; a rule starts with 'rule NAME'", kw);
            break;
        }
        if (strcmp(kw, "src") == 0 || strcmp(kw, "dst") == 0) {
            st = parse_node(&ps, kw[0] == 's');
        } else if (strcmp(kw, "where") == 0) {
            st = parse_where(&ps);
        } else if (strcmp(kw, "out") == 0) {
            st = parse_out(&ps);
        } else if (strcmp(kw, "check") == 0) {
            st = parse_check(&ps);
        } else if (strcmp(kw, "end") == 0) {
            if (!at_end(&ps)) {
                st = perr(&ps, "nothing may follow 'end'");
                break;
            }
            if ((st = rule_finish(&ps)) == RLT_STATUS_OK) {
                rs->rules[rs->n_rules++] = ps.rule;
                ps.rule = NULL;
            }
        } else {
            st = perr(&ps, "unknown statement '%s'; expected src, dst, where, out, check or end", kw);
        }
    }
    if (st == RLT_STATUS_OK && ps.rule) st = perr(&ps, "rule %s is not closed by 'end'", ps.rule->name);
    rlt_str_free(&doc);
    if (st != RLT_STATUS_OK) {
        rs->n_rules = n_before;
        if (is_created) rlt_ruleset_destroy(rs);
        return st;
    }
    *rs_io = rs;
    return RLT_STATUS_OK;
}

rlt_status rlt_ruleset_load(const char *path, rlt_ruleset **rs, rlt_diag *diag)
{
    char *text = NULL;
    rlt_status st = rlt_text_file_read(path, &text, diag);
    if (st != RLT_STATUS_OK) return st;
    st = rlt_ruleset_parse(text, path, rs, diag);
    rlt_free(text);
    return st;
}

const char *rlt_ruleset_default_text(void) { return rlt_default_rules_text; }

rlt_status rlt_ruleset_default(rlt_ruleset **rs, rlt_diag *diag)
{
    return rlt_ruleset_parse(rlt_ruleset_default_text(), "default.rules", rs, diag);
}

void rlt_ruleset_destroy(rlt_ruleset *rs)
{
    if (!rs) return;
    rlt_free(rs->rules);
    rlt_arena_destroy(rs->arena);
    rlt_free(rs);
}

const rlt_rule *rlt_ruleset_find(const rlt_ruleset *rs, const char *name)
{
    for (int i = 0; i < rs->n_rules; i++)
        if (strcmp(rs->rules[i]->name, name) == 0) return rs->rules[i];
    return NULL;
}
