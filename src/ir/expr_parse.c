/*
 * expr_parse.c - the front end for users' tensor expressions:
 * rlt_op_from_expr turns "C[i,j] += A[i,k] * B[k,j]" and the extents
 * "i=64,j=64,k=64" into an rlt_op (grammar and rules in docs/ir.md).
 *
 * One pass of recursive descent builds the expression nodes straight into the
 * op's arena: the output's indices are read first, so every index met later
 * is known to be spatial or becomes the next reduction axis, and every tensor
 * met on the right is an input numbered in order of first appearance (the
 * output, never loaded in the statement, goes last). Input shapes are
 * inferred afterwards from the index ranges. Errors name the 1-based column
 * and the offending text; the input is never trusted (fuzzed: tests/fuzz).
 */
#include "ir/ir.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPR_MAX_CHARS 4096 /* longer text cannot fit a spec anyway */
#define SHAPE_MAX_CHARS 1024
#define EXPR_MAX_DEPTH 64   /* nested parentheses, calls and unary minus */
#define MAX_INPUTS (RLT_MAX_TENSORS - 1)

typedef enum tok_kind {
    TOK_END,
    TOK_NAME,
    TOK_NUMBER,
    TOK_LBRACKET,
    TOK_RBRACKET,
    TOK_LPAREN,
    TOK_RPAREN,
    TOK_COMMA,
    TOK_PLUS,
    TOK_MINUS,
    TOK_STAR,
    TOK_ASSIGN,
    TOK_PLUS_ASSIGN,
    TOK_SEMICOLON,
    TOK_BAD /* a byte no token starts with */
} tok_kind;

typedef struct token {
    tok_kind kind;
    size_t pos, len;
    bool is_integer; /* NUMBER: no '.' and no exponent */
} token;

typedef struct input_tensor {
    char name[RLT_NAME_MAX];
    int n_dims;
} input_tensor;

typedef struct parser {
    const char *src;
    size_t pos; /* where the lexer goes on after `tok` */
    token tok;
    rlt_diag *diag;
    rlt_arena *arena;
    int depth;
    bool is_epilogue; /* parsing the part after ';' */
    bool is_sum;      /* the statement is '+=' */
    bool reads_acc;   /* the epilogue has read the output */
    char out_name[RLT_NAME_MAX];
    int n_spatial, n_axes;
    char axes[RLT_MAX_AXES][RLT_NAME_MAX];
    int n_inputs;
    input_tensor inputs[MAX_INPUTS];
} parser;

/* ---- lexer -------------------------------------------------------------- */

static void lex(parser *p)
{
    const char *s = p->src;
    size_t i = p->pos;
    while (s[i] && isspace((unsigned char)s[i])) i++;
    token t = {TOK_END, i, 0, false};
    unsigned char c = (unsigned char)s[i];
    if (c == '\0') {
        t.kind = TOK_END;
    } else if (rlt_is_ident_start(c)) {
        t.kind = TOK_NAME;
        while (rlt_is_ident_char((unsigned char)s[i + t.len])) t.len++;
    } else if (isdigit(c) || (c == '.' && isdigit((unsigned char)s[i + 1]))) {
        t.kind = TOK_NUMBER;
        t.is_integer = true;
        size_t k = i;
        while (isdigit((unsigned char)s[k])) k++;
        if (s[k] == '.') {
            t.is_integer = false;
            k++;
            while (isdigit((unsigned char)s[k])) k++;
        }
        if (s[k] == 'e' || s[k] == 'E') {
            size_t e = k + 1;
            if (s[e] == '+' || s[e] == '-') e++;
            if (isdigit((unsigned char)s[e])) {
                t.is_integer = false;
                k = e;
                while (isdigit((unsigned char)s[k])) k++;
            }
        }
        t.len = k - i;
    } else {
        t.len = 1;
        switch (c) {
        case '[': t.kind = TOK_LBRACKET; break;
        case ']': t.kind = TOK_RBRACKET; break;
        case '(': t.kind = TOK_LPAREN; break;
        case ')': t.kind = TOK_RPAREN; break;
        case ',': t.kind = TOK_COMMA; break;
        case '-': t.kind = TOK_MINUS; break;
        case '*': t.kind = TOK_STAR; break;
        case '=': t.kind = TOK_ASSIGN; break;
        case ';': t.kind = TOK_SEMICOLON; break;
        case '+':
            t.kind = TOK_PLUS;
            if (s[i + 1] == '=') {
                t.kind = TOK_PLUS_ASSIGN;
                t.len = 2;
            }
            break;
        default: t.kind = TOK_BAD; break;
        }
    }
    p->tok = t;
    p->pos = i + t.len;
}

static tok_kind peek(parser *p)
{
    size_t saved_pos = p->pos;
    token saved = p->tok;
    lex(p);
    tok_kind k = p->tok.kind;
    p->pos = saved_pos;
    p->tok = saved;
    return k;
}

/* ---- diagnostics -------------------------------------------------------- */

/* Text of a token for a message: quoted, printable ASCII only, cut short. */
static const char *describe(const char *src, const token *t, char *buf, size_t cap)
{
    if (t->kind == TOK_END) return "the end of the expression";
    unsigned char c = (unsigned char)src[t->pos];
    if (t->kind == TOK_BAD && (c < 0x20 || c >= 0x7f)) {
        snprintf(buf, cap, "byte 0x%02x", c);
        return buf;
    }
    size_t n = t->len < 24 ? t->len : 24;
    snprintf(buf, cap, "'%.*s%s'", (int)n, src + t->pos, t->len > n ? "..." : "");
    return buf;
}

static rlt_status fail_at(parser *p, rlt_status status, size_t pos, const char *fmt, ...) RLT_PRINTF(4, 5);

static rlt_status fail_at(parser *p, rlt_status status, size_t pos, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return rlt_fail(p->diag, status, "expression, column %zu: %s", pos + 1, msg);
}

/* "expected X, found Y" at the current token. */
static rlt_status fail_expected(parser *p, const char *what)
{
    char buf[48];
    return fail_at(p, RLT_STATUS_PARSE_ERROR, p->tok.pos, "expected %s, found %s", what,
                   describe(p->src, &p->tok, buf, sizeof buf));
}

static rlt_status fail_oom(parser *p)
{
    return rlt_fail(p->diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory parsing an expression");
}

static rlt_status expect(parser *p, tok_kind kind, const char *what)
{
    if (p->tok.kind != kind) return fail_expected(p, what);
    lex(p);
    return RLT_STATUS_OK;
}

static rlt_status take_name(parser *p, const token *t, char name[RLT_NAME_MAX])
{
    if (t->len >= RLT_NAME_MAX)
        return fail_at(p, RLT_STATUS_INVALID_ARGUMENT, t->pos, "name '%.24s...' is %zu characters long; at most %d",
                       p->src + t->pos, t->len, RLT_NAME_MAX - 1);
    memcpy(name, p->src + t->pos, t->len);
    name[t->len] = '\0';
    return RLT_STATUS_OK;
}

static void list_spatial(const parser *p, char *buf, size_t cap)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int a = 0; a < p->n_spatial && k < cap; a++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%s", a > 0 ? "," : "", p->axes[a]);
}

/* ---- names -------------------------------------------------------------- */

static int find_axis(const parser *p, const char *name)
{
    for (int a = 0; a < p->n_axes; a++)
        if (strcmp(p->axes[a], name) == 0) return a;
    return -1;
}

static bool is_tensor_name(const parser *p, const char *name)
{
    if (strcmp(p->out_name, name) == 0) return true;
    for (int t = 0; t < p->n_inputs; t++)
        if (strcmp(p->inputs[t].name, name) == 0) return true;
    return false;
}

/* The axis an index name stands for; a name first met on the right of '+='
 * becomes the next reduction axis. */
static rlt_status resolve_index(parser *p, const token *t, int *axis)
{
    char name[RLT_NAME_MAX], out[96];
    rlt_status st = take_name(p, t, name);
    if (st != RLT_STATUS_OK) return st;
    if (is_tensor_name(p, name))
        return fail_at(p, RLT_STATUS_INVALID_ARGUMENT, t->pos,
                       "'%s' is used both as a tensor and as an index; give them different names", name);
    list_spatial(p, out, sizeof out);
    int a = find_axis(p, name);
    if (a >= 0 && p->is_epilogue && a >= p->n_spatial)
        return fail_at(p, RLT_STATUS_INVALID_ARGUMENT, t->pos,
                       "index '%s' is summed over by the statement; the epilogue is elementwise over %s[%s] and "
                       "may use only those indices",
                       name, p->out_name, out);
    if (a >= 0) {
        *axis = a;
        return RLT_STATUS_OK;
    }
    if (p->is_epilogue)
        return fail_at(p, RLT_STATUS_INVALID_ARGUMENT, t->pos,
                       "index '%s' is not an index of %s[%s]; the epilogue is elementwise and may use only those",
                       name, p->out_name, out);
    if (!p->is_sum)
        return fail_at(p, RLT_STATUS_INVALID_ARGUMENT, t->pos,
                       "index '%s' is not an index of the output %s[%s], and '=' does not sum; use '+=' to sum "
                       "over %s",
                       name, p->out_name, out, name);
    if (p->n_axes == RLT_MAX_AXES)
        return fail_at(p, RLT_STATUS_INVALID_ARGUMENT, t->pos, "index '%s' is one more than the %d an op may have",
                       name, RLT_MAX_AXES);
    memcpy(p->axes[p->n_axes], name, sizeof name);
    *axis = p->n_axes++;
    return RLT_STATUS_OK;
}

/* ---- expressions -------------------------------------------------------- */


/* An integer of an index (no sign), at most RLT_MAX_EXTENT. */
static rlt_status index_integer(parser *p, int64_t *out)
{
    char buf[48];
    if (p->tok.kind != TOK_NUMBER || !p->tok.is_integer)
        return fail_at(p, RLT_STATUS_PARSE_ERROR, p->tok.pos,
                       "expected a whole number in an index term, found %s",
                       describe(p->src, &p->tok, buf, sizeof buf));
    int64_t v = 0;
    for (size_t i = 0; i < p->tok.len; i++) {
        v = v * 10 + (p->src[p->tok.pos + i] - '0');
        if (v > RLT_MAX_EXTENT)
            return fail_at(p, RLT_STATUS_INVALID_ARGUMENT, p->tok.pos,
                           "index number %s is too large; at most %" PRId64,
                           describe(p->src, &p->tok, buf, sizeof buf), RLT_MAX_EXTENT);
    }
    *out = v;
    lex(p);
    return RLT_STATUS_OK;
}

/* affine := ['-'] term (('+' | '-') term)*, term := INT | NAME | INT*NAME | NAME*INT */
static rlt_status parse_affine(parser *p, rlt_affine *aff)
{
    rlt_status st = RLT_STATUS_OK;
    size_t start = p->tok.pos;
    size_t mentioned_at[RLT_MAX_AXES] = {0}; /* 1 + position of an index's first term here */
    int64_t sign = 1;
    if (p->tok.kind == TOK_MINUS) {
        sign = -1;
        lex(p);
    }
    for (;;) {
        int64_t v = 1;
        int axis = -1;
        if (p->tok.kind == TOK_NUMBER) {
            if ((st = index_integer(p, &v)) != RLT_STATUS_OK) return st;
            if (p->tok.kind == TOK_STAR) {
                lex(p);
                if (p->tok.kind != TOK_NAME) return fail_expected(p, "an index name after '*'");
                if ((st = resolve_index(p, &p->tok, &axis)) != RLT_STATUS_OK) return st;
                if (!mentioned_at[axis]) mentioned_at[axis] = p->tok.pos + 1;
                lex(p);
            }
        } else if (p->tok.kind == TOK_NAME) {
            if ((st = resolve_index(p, &p->tok, &axis)) != RLT_STATUS_OK) return st;
            if (!mentioned_at[axis]) mentioned_at[axis] = p->tok.pos + 1;
            lex(p);
            if (p->tok.kind == TOK_STAR) {
                lex(p);
                if ((st = index_integer(p, &v)) != RLT_STATUS_OK) return st;
            }
        } else {
            return fail_expected(p, "an index term (an index name, a whole number, or NUMBER*NAME)");
        }
        /* Each term is at most 2^31 and the sums stay within it, so the
         * arithmetic here cannot overflow. */
        int64_t *slot = axis >= 0 ? &aff->coef[axis] : &aff->offset;
        *slot += sign * v;
        if (*slot > RLT_MAX_EXTENT || *slot < -RLT_MAX_EXTENT)
            return fail_at(p, RLT_STATUS_INVALID_ARGUMENT, start,
                           "an index's %s adds up to more than %" PRId64 " in magnitude",
                           axis >= 0 ? "coefficient" : "constant", RLT_MAX_EXTENT);
        if (p->tok.kind == TOK_PLUS) sign = 1;
        else if (p->tok.kind == TOK_MINUS) sign = -1;
        else break;
        lex(p);
    }
    /* An index whose terms cancel would vanish from the printed form, which
     * then would no longer sum over it (nor list it in the same order). */
    for (int a = 0; a < p->n_axes; a++)
        if (mentioned_at[a] && aff->coef[a] == 0)
            return fail_at(p, RLT_STATUS_INVALID_ARGUMENT, mentioned_at[a] - 1,
                           "index '%s' has coefficient 0 in this index; drop its terms", p->axes[a]);
    return RLT_STATUS_OK;
}

static rlt_status parse_expr(parser *p, const rlt_expr **out);

/* NAME '[' affine (',' affine)* ']' : an input, or in an epilogue the output
 * read at its own element (the statement's result, ACC). */
static rlt_status parse_load(parser *p, const rlt_expr **out)
{
    rlt_status st = RLT_STATUS_OK;
    token name_tok = p->tok;
    char name[RLT_NAME_MAX], spatial[96];
    if ((st = take_name(p, &name_tok, name)) != RLT_STATUS_OK) return st;
    bool is_output = strcmp(name, p->out_name) == 0;
    list_spatial(p, spatial, sizeof spatial);
    if (is_output && !p->is_epilogue)
        return fail_at(p, RLT_STATUS_INVALID_ARGUMENT, name_tok.pos,
                       "the output %s cannot be read in its own statement; to use the result, add an epilogue "
                       "such as '; %s[%s] = relu(%s[%s])'",
                       name, name, spatial, name, spatial);
    if (find_axis(p, name) >= 0)
        return fail_at(p, RLT_STATUS_INVALID_ARGUMENT, name_tok.pos,
                       "'%s' is used both as an index and as a tensor; give them different names", name);
    lex(p); /* the name */
    lex(p); /* '[' */
    rlt_expr *e = rlt_expr_new(p->arena, is_output ? RLT_EXPR_ACC : RLT_EXPR_LOAD, NULL, NULL);
    if (!e) return fail_oom(p);
    int n_dims = 0;
    for (;;) {
        if (n_dims == RLT_MAX_DIMS)
            return fail_at(p, RLT_STATUS_INVALID_ARGUMENT, p->tok.pos,
                           "tensor %s has more than %d indices; at most %d", name, RLT_MAX_DIMS, RLT_MAX_DIMS);
        if ((st = parse_affine(p, &e->index[n_dims++])) != RLT_STATUS_OK) return st;
        if (p->tok.kind == TOK_COMMA) {
            lex(p);
            continue;
        }
        if (p->tok.kind == TOK_RBRACKET) break;
        return fail_expected(p, "',' or ']' after an index");
    }
    lex(p); /* ']' */
    if (is_output) {
        bool is_own_element = n_dims == p->n_spatial;
        for (int d = 0; d < n_dims && is_own_element; d++) {
            for (int a = 0; a < RLT_MAX_AXES; a++)
                if (e->index[d].coef[a] != (a == d ? 1 : 0)) is_own_element = false;
            if (e->index[d].offset != 0) is_own_element = false;
        }
        if (!is_own_element)
            return fail_at(p, RLT_STATUS_INVALID_ARGUMENT, name_tok.pos,
                           "the epilogue may read the output only as %s[%s], the element it assigns", name,
                           spatial);
        memset(e->index, 0, sizeof e->index);
        p->reads_acc = true;
        *out = e;
        return RLT_STATUS_OK;
    }
    int t = 0;
    while (t < p->n_inputs && strcmp(p->inputs[t].name, name) != 0) t++;
    if (t == p->n_inputs) {
        if (p->n_inputs == MAX_INPUTS)
            return fail_at(p, RLT_STATUS_INVALID_ARGUMENT, name_tok.pos,
                           "tensor %s is one more than the %d inputs an op may have", name, MAX_INPUTS);
        memcpy(p->inputs[t].name, name, sizeof name);
        p->inputs[t].n_dims = n_dims;
        p->n_inputs++;
    } else if (p->inputs[t].n_dims != n_dims) {
        return fail_at(p, RLT_STATUS_INVALID_ARGUMENT, name_tok.pos,
                       "tensor %s has %d %s here but %d where it first appears; use it with the same number "
                       "everywhere",
                       name, n_dims, n_dims == 1 ? "index" : "indices", p->inputs[t].n_dims);
    }
    e->tensor = t;
    *out = e;
    return RLT_STATUS_OK;
}

/* relu(e), max(e, e), min(e, e); the current token is the name. */
static rlt_status parse_call(parser *p, const rlt_expr **out)
{
    rlt_status st = RLT_STATUS_OK;
    token name_tok = p->tok;
    const char *name = p->src + name_tok.pos;
    rlt_expr_kind kind;
    if (name_tok.len == 4 && strncmp(name, "relu", 4) == 0) kind = RLT_EXPR_RELU;
    else if (name_tok.len == 3 && strncmp(name, "max", 3) == 0) kind = RLT_EXPR_MAX;
    else if (name_tok.len == 3 && strncmp(name, "min", 3) == 0) kind = RLT_EXPR_MIN;
    else {
        char buf[48];
        return fail_at(p, RLT_STATUS_PARSE_ERROR, name_tok.pos,
                       "unknown function %s; the functions are relu(e), max(e, e) and min(e, e)",
                       describe(p->src, &name_tok, buf, sizeof buf));
    }
    lex(p); /* the name */
    lex(p); /* '(' */
    const rlt_expr *a = NULL, *b = NULL;
    if ((st = parse_expr(p, &a)) != RLT_STATUS_OK) return st;
    if (kind != RLT_EXPR_RELU) {
        if ((st = expect(p, TOK_COMMA, kind == RLT_EXPR_MAX ? "',' between max's two arguments"
                                                            : "',' between min's two arguments")) != RLT_STATUS_OK)
            return st;
        if ((st = parse_expr(p, &b)) != RLT_STATUS_OK) return st;
    }
    if ((st = expect(p, TOK_RPAREN, "')' to close the call")) != RLT_STATUS_OK) return st;
    rlt_expr *e = rlt_expr_new(p->arena, kind, a, b);
    if (!e) return fail_oom(p);
    *out = e;
    return RLT_STATUS_OK;
}

static rlt_status parse_number(parser *p, double sign, const rlt_expr **out)
{
    char text[64], buf[48];
    if (p->tok.len >= sizeof text)
        return fail_at(p, RLT_STATUS_INVALID_ARGUMENT, p->tok.pos, "number %s has more than %zu characters",
                       describe(p->src, &p->tok, buf, sizeof buf), sizeof text - 1);
    memcpy(text, p->src + p->tok.pos, p->tok.len);
    text[p->tok.len] = '\0';
    double v = strtod(text, NULL);
    if (!isfinite(v))
        return fail_at(p, RLT_STATUS_INVALID_ARGUMENT, p->tok.pos, "number %s is too large for a double",
                       describe(p->src, &p->tok, buf, sizeof buf));
    rlt_expr *e = rlt_expr_new(p->arena, RLT_EXPR_CONST, NULL, NULL);
    if (!e) return fail_oom(p);
    e->value = sign * v;
    lex(p);
    *out = e;
    return RLT_STATUS_OK;
}

static rlt_status parse_primary(parser *p, const rlt_expr **out)
{
    rlt_status st = RLT_STATUS_OK;
    char buf[48];
    switch (p->tok.kind) {
    case TOK_NUMBER: return parse_number(p, 1.0, out);
    case TOK_LPAREN: {
        size_t open = p->tok.pos;
        lex(p);
        if ((st = parse_expr(p, out)) != RLT_STATUS_OK) return st;
        if (p->tok.kind != TOK_RPAREN)
            return fail_at(p, RLT_STATUS_PARSE_ERROR, p->tok.pos, "expected ')' to close the '(' at column %zu, found %s",
                           open + 1, describe(p->src, &p->tok, buf, sizeof buf));
        lex(p);
        return RLT_STATUS_OK;
    }
    case TOK_NAME: {
        tok_kind next = peek(p);
        if (next == TOK_LPAREN) return parse_call(p, out);
        if (next == TOK_LBRACKET) return parse_load(p, out);
        char name[RLT_NAME_MAX];
        if ((st = take_name(p, &p->tok, name)) != RLT_STATUS_OK) return st;
        if (find_axis(p, name) >= 0)
            return fail_at(p, RLT_STATUS_INVALID_ARGUMENT, p->tok.pos,
                           "index '%s' cannot be used as a value; indices appear only inside a tensor's brackets",
                           name);
        lex(p);
        return fail_at(p, RLT_STATUS_PARSE_ERROR, p->tok.pos, "expected '[' after tensor name '%s', found %s",
                       name, describe(p->src, &p->tok, buf, sizeof buf));
    }
    default:
        return fail_expected(p, "a value (a tensor element such as A[i], a number, '(' or relu/max/min)");
    }
}

/* unary := '-' unary | primary; '-' directly before a number is part of it,
 * so "-2" is the constant -2 (and prints back as it). */
static rlt_status parse_unary(parser *p, const rlt_expr **out)
{
    rlt_status st = RLT_STATUS_OK;
    if (p->tok.kind != TOK_MINUS) return parse_primary(p, out);
    lex(p);
    if (p->tok.kind == TOK_NUMBER) return parse_number(p, -1.0, out);
    if (++p->depth > EXPR_MAX_DEPTH)
        return fail_at(p, RLT_STATUS_INVALID_ARGUMENT, p->tok.pos, "expression nested more than %d levels deep",
                       EXPR_MAX_DEPTH);
    const rlt_expr *a = NULL;
    if ((st = parse_unary(p, &a)) != RLT_STATUS_OK) return st;
    p->depth--;
    rlt_expr *e = rlt_expr_new(p->arena, RLT_EXPR_NEG, a, NULL);
    if (!e) return fail_oom(p);
    *out = e;
    return RLT_STATUS_OK;
}

static rlt_status parse_term(parser *p, const rlt_expr **out)
{
    rlt_status st = RLT_STATUS_OK;
    const rlt_expr *lhs = NULL;
    if ((st = parse_unary(p, &lhs)) != RLT_STATUS_OK) return st;
    while (p->tok.kind == TOK_STAR) {
        lex(p);
        const rlt_expr *rhs = NULL;
        if ((st = parse_unary(p, &rhs)) != RLT_STATUS_OK) return st;
        if (!(lhs = rlt_expr_new(p->arena, RLT_EXPR_MUL, lhs, rhs))) return fail_oom(p);
    }
    *out = lhs;
    return RLT_STATUS_OK;
}

static rlt_status parse_expr(parser *p, const rlt_expr **out)
{
    rlt_status st = RLT_STATUS_OK;
    if (++p->depth > EXPR_MAX_DEPTH)
        return fail_at(p, RLT_STATUS_INVALID_ARGUMENT, p->tok.pos, "expression nested more than %d levels deep",
                       EXPR_MAX_DEPTH);
    const rlt_expr *lhs = NULL;
    if ((st = parse_term(p, &lhs)) != RLT_STATUS_OK) return st;
    while (p->tok.kind == TOK_PLUS || p->tok.kind == TOK_MINUS) {
        rlt_expr_kind kind = p->tok.kind == TOK_PLUS ? RLT_EXPR_ADD : RLT_EXPR_SUB;
        lex(p);
        const rlt_expr *rhs = NULL;
        if ((st = parse_term(p, &rhs)) != RLT_STATUS_OK) return st;
        if (!(lhs = rlt_expr_new(p->arena, kind, lhs, rhs))) return fail_oom(p);
    }
    p->depth--;
    *out = lhs;
    return RLT_STATUS_OK;
}

/* ---- statements --------------------------------------------------------- */

/* OUT '[' NAME (',' NAME)* ']' : declares the spatial axes. */
static rlt_status parse_output(parser *p)
{
    rlt_status st = RLT_STATUS_OK;
    char buf[48];
    if (p->tok.kind != TOK_NAME)
        return fail_expected(p, "the output tensor's name, as in 'C[i,j] += A[i,k] * B[k,j]'");
    token out_tok = p->tok;
    if ((st = take_name(p, &out_tok, p->out_name)) != RLT_STATUS_OK) return st;
    lex(p);
    if ((st = expect(p, TOK_LBRACKET, "'[' after the output's name")) != RLT_STATUS_OK) return st;
    for (;;) {
        if (p->tok.kind != TOK_NAME)
            return fail_expected(p, "an index name in the output's brackets (the output needs at least one)");
        char name[RLT_NAME_MAX];
        if ((st = take_name(p, &p->tok, name)) != RLT_STATUS_OK) return st;
        if (find_axis(p, name) >= 0)
            return fail_at(p, RLT_STATUS_INVALID_ARGUMENT, p->tok.pos,
                           "index '%s' appears twice in the output %s; its indices must be distinct", name,
                           p->out_name);
        if (strcmp(name, p->out_name) == 0)
            return fail_at(p, RLT_STATUS_INVALID_ARGUMENT, p->tok.pos,
                           "'%s' is used both as a tensor and as an index; give them different names", name);
        if (p->n_axes == RLT_MAX_DIMS)
            return fail_at(p, RLT_STATUS_INVALID_ARGUMENT, p->tok.pos, "the output %s has more than %d indices",
                           p->out_name, RLT_MAX_DIMS);
        memcpy(p->axes[p->n_axes++], name, sizeof name);
        p->n_spatial = p->n_axes;
        lex(p);
        if (p->tok.kind == TOK_COMMA) {
            lex(p);
            continue;
        }
        if (p->tok.kind == TOK_RBRACKET) break;
        return fail_at(p, RLT_STATUS_PARSE_ERROR, p->tok.pos,
                       "expected ',' or ']' after output index '%s', found %s; the output's indices must be bare "
                       "index names",
                       name, describe(p->src, &p->tok, buf, sizeof buf));
    }
    lex(p);
    return RLT_STATUS_OK;
}

/* ';' OUT[same indices] = expr, where OUT[...] on the right is the result. */
static rlt_status parse_epilogue(parser *p, const rlt_expr **out)
{
    rlt_status st = RLT_STATUS_OK;
    char spatial[96], buf[48];
    list_spatial(p, spatial, sizeof spatial);
    size_t start = p->tok.pos;
    bool is_same = p->tok.kind == TOK_NAME && p->tok.len == strlen(p->out_name) &&
                   strncmp(p->src + p->tok.pos, p->out_name, p->tok.len) == 0;
    if (is_same) {
        lex(p);
        is_same = p->tok.kind == TOK_LBRACKET;
        for (int a = 0; a < p->n_spatial && is_same; a++) {
            lex(p);
            is_same = p->tok.kind == TOK_NAME && p->tok.len == strlen(p->axes[a]) &&
                      strncmp(p->src + p->tok.pos, p->axes[a], p->tok.len) == 0;
            lex(p);
            if (is_same) is_same = p->tok.kind == (a + 1 < p->n_spatial ? TOK_COMMA : TOK_RBRACKET);
        }
    }
    if (!is_same)
        return fail_at(p, RLT_STATUS_PARSE_ERROR, p->tok.pos,
                       "an epilogue after ';' must assign %s[%s], the element the statement computes; found %s",
                       p->out_name, spatial, describe(p->src, &p->tok, buf, sizeof buf));
    lex(p);
    if (p->tok.kind != TOK_ASSIGN)
        return fail_expected(p, "'=' in the epilogue (it assigns; the sum is the statement's)");
    lex(p);
    p->is_epilogue = true;
    if ((st = parse_expr(p, out)) != RLT_STATUS_OK) return st;
    if (!p->reads_acc)
        return fail_at(p, RLT_STATUS_INVALID_ARGUMENT, start,
                       "the epilogue never reads %s[%s], the statement's result; write e.g. '%s[%s] = "
                       "relu(%s[%s])'",
                       p->out_name, spatial, p->out_name, spatial, p->out_name, spatial);
    return RLT_STATUS_OK;
}

static rlt_status parse_statement(parser *p, const rlt_expr **body, const rlt_expr **epilogue)
{
    rlt_status st = RLT_STATUS_OK;
    char spatial[96], buf[48];
    lex(p);
    if ((st = parse_output(p)) != RLT_STATUS_OK) return st;
    list_spatial(p, spatial, sizeof spatial);
    if (p->tok.kind == TOK_PLUS_ASSIGN) p->is_sum = true;
    else if (p->tok.kind != TOK_ASSIGN)
        return fail_at(p, RLT_STATUS_PARSE_ERROR, p->tok.pos, "expected '+=' or '=' after %s[%s], found %s",
                       p->out_name, spatial, describe(p->src, &p->tok, buf, sizeof buf));
    lex(p);
    if ((st = parse_expr(p, body)) != RLT_STATUS_OK) return st;
    if (p->tok.kind == TOK_SEMICOLON) {
        lex(p);
        if (p->tok.kind != TOK_END) {
            if ((st = parse_epilogue(p, epilogue)) != RLT_STATUS_OK) return st;
            if (p->tok.kind == TOK_SEMICOLON) lex(p);
        }
    }
    if (p->tok.kind != TOK_END)
        return fail_expected(p, *epilogue ? "the end of the expression after the epilogue"
                                          : "an operator, ';' or the end of the expression");
    return RLT_STATUS_OK;
}

/* ---- the shape ---------------------------------------------------------- */

static rlt_status fail_shape(rlt_diag *diag, rlt_status status, size_t pos, const char *fmt, ...) RLT_PRINTF(4, 5);

static rlt_status fail_shape(rlt_diag *diag, rlt_status status, size_t pos, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return rlt_fail(diag, status, "shape, column %zu: %s", pos + 1, msg);
}

/* A byte of the shape for a message. */
static const char *shape_char(unsigned char c, char *buf, size_t cap)
{
    if (c == '\0') return "the end of the shape";
    if (c < 0x20 || c >= 0x7f) snprintf(buf, cap, "byte 0x%02x", c);
    else snprintf(buf, cap, "'%c'", c);
    return buf;
}

static void list_axes(const parser *p, char *buf, size_t cap)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int a = 0; a < p->n_axes && k < cap; a++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%s", a > 0 ? ", " : "", p->axes[a]);
}

/* "NAME=EXTENT,...": one extent for every index of the expression. */
static rlt_status parse_shape(const parser *p, const char *shape, int64_t extents[RLT_MAX_AXES], rlt_diag *diag)
{
    char names[RLT_MAX_AXES * RLT_NAME_MAX + 32], cbuf[16];
    list_axes(p, names, sizeof names);
    size_t i = 0;
    while (isspace((unsigned char)shape[i])) i++;
    bool is_empty = shape[i] == '\0';
    while (!is_empty) {
        while (isspace((unsigned char)shape[i])) i++;
        size_t name_at = i, name_len = 0;
        while (rlt_is_ident_char((unsigned char)shape[i + name_len]) &&
               (name_len > 0 || rlt_is_ident_start((unsigned char)shape[i]))) name_len++;
        i += name_len;
        while (isspace((unsigned char)shape[i])) i++;
        if (name_len == 0 || shape[i] != '=') {
            size_t at = name_len == 0 ? name_at : i;
            return fail_shape(diag, RLT_STATUS_PARSE_ERROR, at,
                              "expected NAME=EXTENT items separated by ',' (e.g. i=64,j=64), found %s",
                              shape_char((unsigned char)shape[at], cbuf, sizeof cbuf));
        }
        i++;
        if (name_len >= RLT_NAME_MAX)
            return fail_shape(diag, RLT_STATUS_INVALID_ARGUMENT, name_at,
                              "index name '%.24s...' is longer than %d characters", shape + name_at,
                              RLT_NAME_MAX - 1);
        char name[RLT_NAME_MAX];
        memcpy(name, shape + name_at, name_len);
        name[name_len] = '\0';
        int a = find_axis(p, name);
        if (a < 0)
            return fail_shape(diag, RLT_STATUS_INVALID_ARGUMENT, name_at,
                              "the expression has no index '%s'; its indices are %s", name, names);
        if (extents[a] != 0)
            return fail_shape(diag, RLT_STATUS_INVALID_ARGUMENT, name_at,
                              "index '%s' is given twice; give each index once", name);
        while (isspace((unsigned char)shape[i])) i++;
        size_t value_at = i;
        bool is_negative = shape[i] == '-';
        if (shape[i] == '-' || shape[i] == '+') i++;
        if (!isdigit((unsigned char)shape[i]))
            return fail_shape(diag, RLT_STATUS_PARSE_ERROR, value_at,
                              "the extent of '%s' is not a whole number; expected %s=N with N from 1 to %" PRId64,
                              name, name, RLT_MAX_EXTENT);
        int64_t v = 0;
        bool is_huge = false;
        for (; isdigit((unsigned char)shape[i]); i++) {
            if (v <= RLT_MAX_EXTENT) v = v * 10 + (shape[i] - '0');
            else is_huge = true;
        }
        if (is_huge || v > RLT_MAX_EXTENT || is_negative || v < 1)
            return fail_shape(diag, RLT_STATUS_INVALID_ARGUMENT, value_at,
                              "the extent of '%s' is %.*s%s; expected a whole number from 1 to %" PRId64, name,
                              (int)RLT_MIN(i - value_at, (size_t)24), shape + value_at,
                              i - value_at > 24 ? "..." : "", RLT_MAX_EXTENT);
        while (isspace((unsigned char)shape[i])) i++;
        if (shape[i] != ',' && shape[i] != '\0')
            return fail_shape(diag, RLT_STATUS_PARSE_ERROR, i, "expected ',' or the end after %s's extent, found %s",
                              name, shape_char((unsigned char)shape[i], cbuf, sizeof cbuf));
        extents[a] = v;
        if (shape[i] == '\0') break;
        i++;
    }
    for (int a = 0; a < p->n_axes; a++)
        if (extents[a] == 0)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "shape: index '%s' has no extent; add %s=N (the expression's indices are %s)",
                            p->axes[a], p->axes[a], names);
    return RLT_STATUS_OK;
}

/* ---- finishing the op --------------------------------------------------- */

/* Largest index value per input dimension over the whole domain; dims are
 * one more. Ranges are bounded so that generated index arithmetic never
 * overflows. */
static rlt_status infer_dims(rlt_op *op, const rlt_expr *e, int64_t hi_max[][RLT_MAX_DIMS], rlt_diag *diag)
{
    if (!e) return RLT_STATUS_OK;
    if (e->kind == RLT_EXPR_LOAD) {
        const rlt_tensor *t = &op->tensors[e->tensor];
        for (int d = 0; d < t->n_dims; d++) {
            int64_t lo, hi;
            rlt_affine_range(op, &e->index[d], &lo, &hi);
            if (lo < -RLT_MAX_EXTENT || hi > RLT_MAX_EXTENT) {
                rlt_str text;
                rlt_str_init(&text);
                rlt_affine_print(op, &e->index[d], &text);
                rlt_status st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                                         "expression: index %d of %s, '%s', ranges over [%" PRId64 ", %" PRId64
                                         "], beyond +-%" PRId64 "; use smaller extents or coefficients",
                                         d + 1, t->name, text.has_failed ? "?" : text.data, lo, hi,
                                         RLT_MAX_EXTENT);
                rlt_str_free(&text);
                return st;
            }
            hi_max[e->tensor][d] = RLT_MAX(hi_max[e->tensor][d], hi);
        }
    }
    rlt_status st = infer_dims(op, e->a, hi_max, diag);
    if (st == RLT_STATUS_OK) st = infer_dims(op, e->b, hi_max, diag);
    return st;
}

static rlt_status set_input_dims(rlt_op *op, rlt_diag *diag)
{
    int64_t hi_max[RLT_MAX_TENSORS][RLT_MAX_DIMS];
    for (int t = 0; t < RLT_MAX_TENSORS; t++)
        for (int d = 0; d < RLT_MAX_DIMS; d++) hi_max[t][d] = INT64_MIN;
    rlt_status st = infer_dims(op, op->body, hi_max, diag);
    if (st == RLT_STATUS_OK) st = infer_dims(op, op->epilogue, hi_max, diag);
    if (st != RLT_STATUS_OK) return st;
    for (int t = 0; t < op->n_tensors - 1; t++) {
        rlt_tensor *tensor = &op->tensors[t];
        int64_t n = 1;
        for (int d = 0; d < tensor->n_dims; d++) {
            if (hi_max[t][d] < 0)
                return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                                "expression: index %d of %s is negative at every point (at most %" PRId64
                                "), so every read would be out of bounds; an index must reach 0 or more",
                                d + 1, tensor->name, hi_max[t][d]);
            tensor->dims[d] = hi_max[t][d] + 1;
            n = tensor->dims[d] > RLT_MAX_TENSOR_ELEMS ? RLT_MAX_TENSOR_ELEMS + 1 : n * tensor->dims[d];
            if (n > RLT_MAX_TENSOR_ELEMS) n = RLT_MAX_TENSOR_ELEMS + 1;
        }
        if (n > RLT_MAX_TENSOR_ELEMS)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "expression: input %s would have more than %" PRId64
                            " (2^31) elements; use smaller extents",
                            tensor->name, RLT_MAX_TENSOR_ELEMS);
    }
    return RLT_STATUS_OK;
}

static rlt_status finish_op(const parser *p, const int64_t *extents, rlt_op *op, rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    rlt_str text;
    rlt_str_init(&text);
    snprintf(op->kind, sizeof op->kind, "expr");
    op->n_axes = p->n_axes;
    op->n_spatial = p->n_spatial;
    double points = 1;
    for (int a = 0; a < p->n_axes; a++) {
        memcpy(op->axes[a].name, p->axes[a], RLT_NAME_MAX);
        op->axes[a].extent = extents[a];
        op->axes[a].is_reduce = a >= p->n_spatial;
        points *= (double)extents[a];
    }
    /* 2^62 points keeps every count of the domain within int64. */
    if (points > 0x1p62) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "shape: the expression's iteration domain has %.3g points, more than 2^62; use smaller "
                      "extents",
                      points);
        goto cleanup;
    }
    op->n_tensors = p->n_inputs + 1;
    for (int t = 0; t < p->n_inputs; t++) {
        memcpy(op->tensors[t].name, p->inputs[t].name, RLT_NAME_MAX);
        op->tensors[t].n_dims = p->inputs[t].n_dims;
    }
    rlt_tensor *out = &op->tensors[p->n_inputs];
    memcpy(out->name, p->out_name, RLT_NAME_MAX);
    out->n_dims = p->n_spatial;
    out->is_output = true;
    int64_t n_out = 1;
    for (int a = 0; a < p->n_spatial; a++) {
        out->dims[a] = extents[a];
        n_out = n_out > RLT_MAX_TENSOR_ELEMS / extents[a] ? RLT_MAX_TENSOR_ELEMS + 1 : n_out * extents[a];
    }
    if (n_out > RLT_MAX_TENSOR_ELEMS) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "shape: the output %s would have more than %" PRId64 " (2^31) elements; use smaller extents",
                      out->name, RLT_MAX_TENSOR_ELEMS);
        goto cleanup;
    }
    if ((st = set_input_dims(op, diag)) != RLT_STATUS_OK) goto cleanup;
    op->flops = rlt_op_count_flops(op);

    rlt_str_append(&text, "expr:");
    rlt_op_print_statement(op, &text);
    rlt_str_append(&text, "|");
    for (int a = 0; a < op->n_axes; a++)
        rlt_str_printf(&text, "%s%s=%" PRId64, a > 0 ? "," : "", op->axes[a].name, op->axes[a].extent);
    if (text.has_failed) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory printing an expression");
        goto cleanup;
    }
    if (text.len >= sizeof op->spec) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "expression too long: its normalised spec takes %zu characters, at most %zu", text.len,
                      sizeof op->spec - 1);
        goto cleanup;
    }
    memcpy(op->spec, text.data, text.len + 1);

cleanup:
    rlt_str_free(&text);
    return st;
}

rlt_status rlt_op_from_expr(const char *expr, const char *shape, rlt_op **out, rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    rlt_op *op = NULL;
    parser p = {0};
    if (!out) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "rlt_op_from_expr: no place for the result");
    *out = NULL;
    if (!expr) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "no expression given");
    if (!shape) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "no shape given for the expression; e.g. i=64,j=64");
    if (strnlen(expr, EXPR_MAX_CHARS + 1) > EXPR_MAX_CHARS)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "expression longer than %d characters", EXPR_MAX_CHARS);
    if (strnlen(shape, SHAPE_MAX_CHARS + 1) > SHAPE_MAX_CHARS)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "shape longer than %d characters", SHAPE_MAX_CHARS);

    op = rlt_calloc(1, sizeof *op);
    if (!op || !(op->arena = rlt_arena_create())) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory parsing an expression");
        goto cleanup;
    }
    p.src = expr;
    p.diag = diag;
    p.arena = op->arena;
    const rlt_expr *body = NULL, *epilogue = NULL;
    if ((st = parse_statement(&p, &body, &epilogue)) != RLT_STATUS_OK) goto cleanup;
    op->body = body;
    op->epilogue = epilogue;
    int64_t extents[RLT_MAX_AXES] = {0};
    if ((st = parse_shape(&p, shape, extents, diag)) != RLT_STATUS_OK) goto cleanup;
    if ((st = finish_op(&p, extents, op, diag)) != RLT_STATUS_OK) goto cleanup;
    *out = op;
    op = NULL;

cleanup:
    rlt_op_destroy(op);
    return st;
}
