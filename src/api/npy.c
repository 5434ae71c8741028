/*
 * npy.c - arrays and NumPy's .npy files (rltune/npy.h): rlt_array_create
 * (one allocation, the struct then 64-byte aligned data), rlt_npy_load
 * and rlt_npy_save.
 *
 * The format (numpy.lib.format, versions 1.0 to 3.0): the magic
 * "\x93NUMPY", the version's major and minor bytes, the header's length
 * (little-endian u16 in 1.0, u32 in 2.0 and 3.0), then the header, a
 * Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape':
 * (2, 3), } padded with spaces and a newline, then the data, nothing
 * after it. The reader parses the dict as Python would read it (keys in
 * any order, any whitespace, a trailing comma, ' or " quotes) rather than
 * at fixed offsets, and checks the data's size against the shape before
 * allocating anything for it, so that no header can make it allocate
 * more than the file holds. The writer writes byte for byte what np.save
 * writes (numpy 1.23 and later: the header has room for the first dim to
 * grow to 21 digits; tests/unit/test_npy.c compares with files numpy
 * wrote). docs/formats.md (".npy arrays") is the reference.
 */
#include "core/core.h"
#include "graph/graph.h"
#include "rltune/npy.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The elem values are the graph's dtypes (the graph evaluator takes arrays
 * as they are). */
_Static_assert(RLT_ELEM_F32 == (int)RLT_DTYPE_FLOAT32, "rlt_elem and rlt_dtype differ");
_Static_assert(RLT_ELEM_I64 == (int)RLT_DTYPE_INT64, "rlt_elem and rlt_dtype differ");
_Static_assert(RLT_ELEM_I32 == (int)RLT_DTYPE_INT32, "rlt_elem and rlt_dtype differ");
_Static_assert(RLT_ELEM_BOOL == (int)RLT_DTYPE_BOOL, "rlt_elem and rlt_dtype differ");

/* Array data is little-endian, and '=' in a file means the host's order. */
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "rltune's .npy reader and writer assume a little-endian host"
#endif

#define NPY_MAX_ELEMS ((int64_t)1 << 40)
#define NPY_ALIGN_BYTES 64              /* of array data, and of a written header */
#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_HEADER_MAX_BYTES 65536      /* numpy itself refuses headers over 10000 bytes */
#define NPY_GROWTH_AXIS_MAX_DIGITS 21   /* numpy's spare room for the first dim */
#define NPY_ACCEPTED "rltune reads float32, int64, int32 and bool arrays"

/* ---- arrays ------------------------------------------------------------- */

const char *rlt_elem_name(rlt_elem e)
{
    switch (e) {
    case RLT_ELEM_F32: return "f32";
    case RLT_ELEM_I64: return "i64";
    case RLT_ELEM_I32: return "i32";
    case RLT_ELEM_BOOL: return "bool";
    default: return "?";
    }
}

size_t rlt_elem_size(rlt_elem e)
{
    switch (e) {
    case RLT_ELEM_F32: return 4;
    case RLT_ELEM_I64: return 8;
    case RLT_ELEM_I32: return 4;
    case RLT_ELEM_BOOL: return 1;
    default: return 0;
    }
}

/* NumPy's name of an elem, as messages name dtypes. */
static const char *elem_numpy_name(rlt_elem e)
{
    switch (e) {
    case RLT_ELEM_F32: return "float32";
    case RLT_ELEM_I64: return "int64";
    case RLT_ELEM_I32: return "int32";
    default: return "bool";
    }
}

/* The product of dims, or -1 for a bad rank, a negative dim or an
 * overflow. */
static int64_t shape_n_elems(int rank, const int64_t *dims)
{
    if (rank < 0 || rank > RLT_ARRAY_MAX_RANK || (rank > 0 && !dims)) return -1;
    bool has_zero = false;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0) return -1;
        if (dims[i] == 0) has_zero = true;
    }
    if (has_zero) return 0;
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (n > INT64_MAX / dims[i]) return -1;
        n *= dims[i];
    }
    return n;
}

int64_t rlt_array_n_elems(const rlt_array *a) { return a ? shape_n_elems(a->rank, a->dims) : 0; }

/* Whether the dims (>= 0) other than 0 multiply to more than 2^40: what
 * rltune refuses, even when a 0 makes the array empty (NumPy refuses any
 * whose product does not fit its index type, and each of rltune's headers
 * then fits in 128 bytes). */
static bool shape_is_too_large(int rank, const int64_t *dims)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] == 0) continue;
        if (dims[i] > NPY_MAX_ELEMS / n) return true;
        n *= dims[i];
    }
    return false;
}

/* A shape as Python prints a tuple: "()", "(3,)", "(2, 3)". */
static const char *shape_text(int rank, const int64_t *dims, char *buf, size_t cap)
{
    size_t len = (size_t)snprintf(buf, cap, "(");
    for (int i = 0; i < rank && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%" PRId64, i ? ", " : "", dims[i]);
    if (len < cap) snprintf(buf + len, cap - len, rank == 1 ? ",)" : ")");
    return buf;
}

/* The checks rlt_array_create makes, with its messages (`what` names the
 * array in them). n_elems on success. */
static rlt_status shape_check(const char *what, rlt_elem elem, int rank, const int64_t *dims, int64_t *out_n,
                              rlt_diag *diag)
{
    if (rlt_elem_size(elem) == 0)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "%s: unknown element type %d (RLT_ELEM_F32, _I64, _I32 or _BOOL)", what, (int)elem);
    if (rank < 0 || rank > RLT_ARRAY_MAX_RANK)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s: rank %d: arrays have rank 0 to %d", what, rank,
                        RLT_ARRAY_MAX_RANK);
    if (rank > 0 && !dims)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s: rank %d without dims", what, rank);
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s: dim %d is %" PRId64 ": dims are 0 or more",
                            what, i, dims[i]);
    if (shape_is_too_large(rank, dims)) {
        char shape[256];
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "%s: shape %s is too large: its dims (those of 0 aside) multiply to more than 2^40", what,
                        shape_text(rank, dims, shape, sizeof shape));
    }
    *out_n = shape_n_elems(rank, dims);
    return RLT_STATUS_OK;
}

/* An array of a checked shape: the struct and its data in one allocation,
 * the data zeroed when is_zeroed (else left as it is: the caller fills it).
 * NULL when out of memory. */
static rlt_array *array_alloc(rlt_elem elem, int rank, const int64_t *dims, int64_t n, bool is_zeroed)
{
    uint64_t data_bytes = (uint64_t)n * rlt_elem_size(elem);
    uint64_t total = sizeof(rlt_array) + (NPY_ALIGN_BYTES - 1) + data_bytes;
    if (total > SIZE_MAX) return NULL;
    rlt_array *a = is_zeroed ? rlt_calloc(1, (size_t)total) : rlt_malloc((size_t)total);
    if (!a) return NULL;
    memset(a, 0, sizeof *a);
    a->elem = elem;
    a->rank = rank;
    for (int i = 0; i < rank; i++) a->dims[i] = dims[i];
    uintptr_t at = (uintptr_t)(a + 1);
    at = (at + (NPY_ALIGN_BYTES - 1)) & ~(uintptr_t)(NPY_ALIGN_BYTES - 1);
    a->data = (void *)at;
    return a;
}

rlt_status rlt_array_create(rlt_elem elem, int rank, const int64_t *dims, rlt_array **out, rlt_diag *diag)
{
    int64_t n = 0;
    rlt_status st = shape_check("rlt_array_create", elem, rank, dims, &n, diag);
    if (st != RLT_STATUS_OK) return st;
    rlt_array *a = array_alloc(elem, rank, dims, n, true);
    if (!a) {
        char shape[256];
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory for a %s %s array",
                        shape_text(rank, dims, shape, sizeof shape), elem_numpy_name(elem));
    }
    *out = a;
    return RLT_STATUS_OK;
}

void rlt_array_destroy(rlt_array *a) { rlt_free(a); }

/* ---- the header: a Python dict literal ---------------------------------- */

/* What the header says. descr is the dtype string as written (NUL-ended,
 * cut at sizeof descr - 1 bytes: no dtype rltune knows is that long). */
typedef struct npy_header {
    bool has_descr, has_fortran_order, has_shape;
    bool is_structured; /* descr is a list of fields, not a string */
    char descr[48];
    size_t descr_len;
    bool is_fortran_order;
    int rank; /* as written; dims holds the first RLT_ARRAY_MAX_RANK */
    int64_t dims[RLT_ARRAY_MAX_RANK];
} npy_header;

typedef struct npy_parser {
    const char *path;
    const char *text; /* the header, len bytes (not NUL-ended: it may hold NULs) */
    size_t len;
    size_t at;
    rlt_diag *diag;
} npy_parser;

/* Up to `max` bytes of `s` with anything unprintable as \xNN, and "..."
 * when cut. */
static const char *printable(const char *s, size_t len, size_t max, char *buf, size_t cap)
{
    size_t out = 0;
    for (size_t i = 0; i < len && out + 8 < cap; i++) {
        if (i == max) {
            memcpy(buf + out, "...", 3);
            out += 3;
            break;
        }
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f) buf[out++] = (char)c;
        else out += (size_t)snprintf(buf + out, cap - out, "\\x%02x", c);
    }
    buf[out] = '\0';
    return buf;
}

/* PARSE_ERROR at the parser's position: what was expected there, and the
 * header up to a point. */
static rlt_status syntax_error(npy_parser *ps, const char *expected)
{
    char text[512];
    size_t end = ps->len;
    while (end > 0 && (ps->text[end - 1] == ' ' || ps->text[end - 1] == '\n')) end--;
    return rlt_fail(ps->diag, RLT_STATUS_PARSE_ERROR,
                    "%s: the .npy header is not a Python dict literal: expected %s at byte %zu of the header: %s",
                    ps->path, expected, ps->at, printable(ps->text, end, 120, text, sizeof text));
}

static bool at_end(const npy_parser *ps) { return ps->at >= ps->len; }
static char peek(const npy_parser *ps) { return at_end(ps) ? '\0' : ps->text[ps->at]; }

static void skip_space(npy_parser *ps)
{
    while (!at_end(ps) && strchr(" \t\n\r\f\v", ps->text[ps->at]) && ps->text[ps->at] != '\0') ps->at++;
}

/* A quoted string ('...' or "...", an optional u prefix, no escapes):
 * *out_start and *out_len are its contents, in the header. */
static rlt_status parse_string(npy_parser *ps, const char *what, size_t *out_start, size_t *out_len)
{
    if (peek(ps) == 'u' || peek(ps) == 'U') ps->at++;
    char quote = peek(ps);
    if (quote != '\'' && quote != '"') return syntax_error(ps, what);
    size_t start = ++ps->at;
    while (!at_end(ps) && ps->text[ps->at] != quote) {
        char c = ps->text[ps->at];
        if (c == '\\' || c == '\n' || c == '\r') return syntax_error(ps, "a closing quote (and no escapes)");
        ps->at++;
    }
    if (at_end(ps)) return syntax_error(ps, "a closing quote");
    *out_start = start;
    *out_len = ps->at - start;
    ps->at++;
    return RLT_STATUS_OK;
}

/* A bracketed value, (...), [...] or {...}, skipped whole (a structured
 * dtype's list of fields). */
static rlt_status skip_bracketed(npy_parser *ps)
{
    char stack[64];
    int depth = 0;
    do {
        if (at_end(ps)) return syntax_error(ps, "a closing bracket");
        char c = ps->text[ps->at++];
        if (c == '(' || c == '[' || c == '{') {
            if (depth == (int)sizeof stack) return syntax_error(ps, "brackets nested less deeply");
            stack[depth++] = c == '(' ? ')' : c == '[' ? ']' : '}';
        } else if (c == ')' || c == ']' || c == '}') {
            if (c != stack[depth - 1]) {
                ps->at--;
                return syntax_error(ps, "matching brackets");
            }
            depth--;
        } else if (c == '\'' || c == '"') {
            while (!at_end(ps) && ps->text[ps->at] != c) ps->at += ps->text[ps->at] == '\\' ? 2 : 1;
            if (at_end(ps)) return syntax_error(ps, "a closing quote");
            ps->at++;
        }
    } while (depth > 0);
    return RLT_STATUS_OK;
}

/* True or False. */
static rlt_status parse_bool(npy_parser *ps, bool *out)
{
    size_t start = ps->at;
    while (!at_end(ps) && (ps->text[ps->at] == '_' || (ps->text[ps->at] >= 'a' && ps->text[ps->at] <= 'z') ||
                           (ps->text[ps->at] >= 'A' && ps->text[ps->at] <= 'Z') ||
                           (ps->text[ps->at] >= '0' && ps->text[ps->at] <= '9')))
        ps->at++;
    size_t len = ps->at - start;
    if (len == 4 && memcmp(ps->text + start, "True", 4) == 0) *out = true;
    else if (len == 5 && memcmp(ps->text + start, "False", 5) == 0) *out = false;
    else {
        ps->at = start;
        return syntax_error(ps, "True or False for 'fortran_order'");
    }
    return RLT_STATUS_OK;
}

/* A tuple of whole numbers, "()", "(3,)", "(2, 3)", "(2, 3,)" (and
 * Python 2's "(2L, 3L)"). */
static rlt_status parse_shape(npy_parser *ps, npy_header *h)
{
    if (peek(ps) != '(') return syntax_error(ps, "a tuple '(...)' for 'shape'");
    ps->at++;
    skip_space(ps);
    h->rank = 0;
    bool has_comma = false;
    while (peek(ps) != ')') {
        size_t start = ps->at;
        bool is_negative = peek(ps) == '-';
        if (is_negative) {
            ps->at++;
            skip_space(ps);
        }
        if (peek(ps) < '0' || peek(ps) > '9') return syntax_error(ps, "a whole number in 'shape'");
        int64_t v = 0;
        bool is_too_big = false;
        while (peek(ps) >= '0' && peek(ps) <= '9') {
            int digit = ps->text[ps->at++] - '0';
            if (v > (INT64_MAX - digit) / 10) is_too_big = true;
            else v = v * 10 + digit;
        }
        if (peek(ps) == 'L' || peek(ps) == 'l') ps->at++;
        if (is_negative || is_too_big) {
            char text[64];
            return rlt_fail(ps->diag, RLT_STATUS_PARSE_ERROR,
                            "%s: the .npy header's shape holds %s: dims are whole numbers from 0 to 2^63-1",
                            ps->path, printable(ps->text + start, ps->at - start, 40, text, sizeof text));
        }
        if (h->rank < RLT_ARRAY_MAX_RANK) h->dims[h->rank] = v;
        if (h->rank < INT_MAX) h->rank++;
        skip_space(ps);
        if (peek(ps) == ',') {
            ps->at++;
            has_comma = true;
            skip_space(ps);
        } else if (peek(ps) != ')') {
            return syntax_error(ps, "',' or ')' in 'shape'");
        }
    }
    if (h->rank == 1 && !has_comma) return syntax_error(ps, "a tuple for 'shape' (one dim is written '(N,)')");
    ps->at++;
    return RLT_STATUS_OK;
}

/* Parses the whole header into *h: the dict and nothing after it but
 * whitespace. Every key once; no key but the three. */
static rlt_status parse_header(npy_parser *ps, npy_header *h)
{
    rlt_status st;
    memset(h, 0, sizeof *h);
    skip_space(ps);
    if (peek(ps) != '{') return syntax_error(ps, "'{'");
    ps->at++;
    for (;;) {
        skip_space(ps);
        if (peek(ps) == '}') break;
        size_t key_start, key_len;
        if ((st = parse_string(ps, "a quoted key or '}'", &key_start, &key_len)) != RLT_STATUS_OK) return st;
        const char *key = ps->text + key_start;
        bool *has = NULL;
        if (key_len == 5 && memcmp(key, "descr", 5) == 0) has = &h->has_descr;
        else if (key_len == 13 && memcmp(key, "fortran_order", 13) == 0) has = &h->has_fortran_order;
        else if (key_len == 5 && memcmp(key, "shape", 5) == 0) has = &h->has_shape;
        char text[128];
        if (!has)
            return rlt_fail(ps->diag, RLT_STATUS_PARSE_ERROR,
                            "%s: the .npy header has a key '%s': it holds 'descr', 'fortran_order' and 'shape' only",
                            ps->path, printable(key, key_len, 40, text, sizeof text));
        if (*has)
            return rlt_fail(ps->diag, RLT_STATUS_PARSE_ERROR, "%s: the .npy header has the key '%s' twice",
                            ps->path, printable(key, key_len, 40, text, sizeof text));
        *has = true;
        skip_space(ps);
        if (peek(ps) != ':') return syntax_error(ps, "':' after the key");
        ps->at++;
        skip_space(ps);
        if (has == &h->has_descr) {
            if (peek(ps) == '[') {
                h->is_structured = true;
                st = skip_bracketed(ps);
            } else {
                size_t start, len;
                st = parse_string(ps, "a quoted dtype for 'descr'", &start, &len);
                if (st == RLT_STATUS_OK) {
                    h->descr_len = len;
                    size_t keep = RLT_MIN(len, sizeof h->descr - 1);
                    memcpy(h->descr, ps->text + start, keep);
                    h->descr[keep] = '\0';
                }
            }
        } else if (has == &h->has_fortran_order) {
            st = parse_bool(ps, &h->is_fortran_order);
        } else {
            st = parse_shape(ps, h);
        }
        if (st != RLT_STATUS_OK) return st;
        skip_space(ps);
        if (peek(ps) == ',') ps->at++;
        else if (peek(ps) != '}') return syntax_error(ps, "',' or '}'");
    }
    ps->at++;
    skip_space(ps);
    if (!at_end(ps)) return syntax_error(ps, "nothing but spaces after the dict");
    const char *missing = !h->has_descr ? "descr" : !h->has_fortran_order ? "fortran_order" : !h->has_shape ? "shape" : NULL;
    if (missing)
        return rlt_fail(ps->diag, RLT_STATUS_PARSE_ERROR,
                        "%s: the .npy header has no '%s' (it holds 'descr', 'fortran_order' and 'shape')", ps->path,
                        missing);
    return RLT_STATUS_OK;
}

/* ---- dtypes ------------------------------------------------------------- */

/* A NumPy dtype rltune does not read: its kind letter and size, its name,
 * and the conversion to save with ("" for none). */
typedef struct npy_other_dtype {
    char kind;
    int size; /* bytes; 0: any (a string's length, an object's pointer) */
    const char *name;
    const char *hint;
} npy_other_dtype;

static const npy_other_dtype other_dtypes[] = {
    {'f', 2, "float16", ": save with .astype(np.float32)"},
    {'f', 8, "float64", ": save with .astype(np.float32)"},
    {'f', 12, "float96", ": save with .astype(np.float32)"},
    {'f', 16, "float128", ": save with .astype(np.float32)"},
    {'i', 1, "int8", ": save with .astype(np.int32)"},
    {'i', 2, "int16", ": save with .astype(np.int32)"},
    {'u', 1, "uint8", ": save with .astype(np.int32)"},
    {'u', 2, "uint16", ": save with .astype(np.int32)"},
    {'u', 4, "uint32", ": save with .astype(np.int64)"},
    {'u', 8, "uint64", ": save with .astype(np.int64)"},
    {'c', 8, "complex64", ": save the .real and .imag parts as float32 arrays of their own"},
    {'c', 16, "complex128", ": save the .real and .imag parts as float32 arrays of their own"},
    {'c', 32, "complex256", ": save the .real and .imag parts as float32 arrays of their own"},
    {'O', 0, "object: Python objects, pickled", ""},
    {'S', 0, "bytes", ""},
    {'a', 0, "bytes", ""},
    {'U', 0, "str", ""},
    {'V', 0, "void: raw bytes", ""},
    {'M', 0, "datetime64", ": save with .astype(np.int64)"},
    {'m', 0, "timedelta64", ": save with .astype(np.int64)"},
};

/* The elem of the header's descr, or the refusal. */
static rlt_status descr_to_elem(const char *path, const npy_header *h, rlt_elem *out, rlt_diag *diag)
{
    char text[160];
    if (h->is_structured)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "%s: the dtype is structured (a list of named fields); " NPY_ACCEPTED
                        ": save each field as an array of its own",
                        path);
    const char *d = h->descr;
    size_t len = RLT_MIN(h->descr_len, sizeof h->descr - 1); /* h->descr holds no more */
    const char *shown = printable(h->descr, h->descr_len, 40, text, sizeof text);
    char order = '=';
    if (len > 0 && d[0] != '\0' && strchr("<>=|!", d[0])) {
        order = d[0];
        d++;
        len--;
    }
    bool is_big_endian = order == '>' || order == '!';
    char kind = len > 0 ? d[0] : '\0';
    int size = 0;
    size_t i = 1;
    for (; i < len && d[i] >= '0' && d[i] <= '9' && size < 1000; i++) size = size * 10 + (d[i] - '0');
    bool has_size = i > 1;
    bool has_unit = i < len && d[i] == '[' && d[len - 1] == ']' && (kind == 'M' || kind == 'm');
    bool is_whole = len > 0 && (i == len || has_unit) && h->descr_len < sizeof h->descr - 1;
    rlt_elem elem = RLT_ELEM_F32;
    bool is_ours = true;
    if (len == 1 && kind == '?') elem = RLT_ELEM_BOOL;
    else if (is_whole && !has_unit && kind == 'b' && size == 1) elem = RLT_ELEM_BOOL;
    else if (is_whole && !has_unit && kind == 'f' && size == 4) elem = RLT_ELEM_F32;
    else if (is_whole && !has_unit && kind == 'i' && size == 8) elem = RLT_ELEM_I64;
    else if (is_whole && !has_unit && kind == 'i' && size == 4) elem = RLT_ELEM_I32;
    else is_ours = false;
    if (is_ours) {
        if (is_big_endian && rlt_elem_size(elem) > 1)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "%s: dtype '%s' (%s) is big-endian; rltune reads little-endian arrays: save with "
                            ".astype('<%c%d')",
                            path, shown, elem_numpy_name(elem), kind, size);
        *out = elem;
        return RLT_STATUS_OK;
    }
    if (is_whole) {
        for (size_t k = 0; k < RLT_ARRAY_LEN(other_dtypes); k++) {
            const npy_other_dtype *o = &other_dtypes[k];
            if (o->kind != kind || (o->size != 0 && o->size != size) || (o->size != 0 && has_unit)) continue;
            if (o->size == 0 && !has_size && kind != 'O' && kind != 'M' && kind != 'm') continue;
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s: dtype '%s' (%s) is not supported; " NPY_ACCEPTED "%s",
                            path, shown, o->name, o->hint);
        }
    }
    return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                    "%s: the .npy header's descr '%s' is not a NumPy dtype; " NPY_ACCEPTED
                    " ('<f4', '<i8', '<i4', '|b1')",
                    path, shown);
}

/* ---- reading ------------------------------------------------------------ */

/* fread of exactly n bytes: true when they were all there. */
static bool read_exact(FILE *f, void *buf, size_t n) { return fread(buf, 1, n, f) == n; }

/* The refusal of a short read: IO_ERROR when reading failed, PARSE_ERROR
 * (truncated) when the file ended, with `where` saying in what. */
static rlt_status short_read(FILE *f, const char *path, const char *where, rlt_diag *diag)
{
    if (ferror(f)) return rlt_fail(diag, RLT_STATUS_IO_ERROR, "%s: cannot read: %s", path, strerror(errno));
    return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s: truncated: the file ends inside %s", path, where);
}

/* Reads the data of a pipe or device (whose size is unknown beforehand)
 * into a buffer growing with what arrives, so that a header claiming more
 * than comes allocates no more than came. *out (free with rlt_free) holds
 * *out_len bytes: need, or fewer at the end of the input. */
static rlt_status read_stream(FILE *f, const char *path, uint64_t need, char **out, uint64_t *out_len,
                              rlt_diag *diag)
{
    char *buf = NULL;
    uint64_t len = 0, cap = 0;
    *out = NULL;
    while (len < need) {
        if (len == cap) {
            uint64_t grown = RLT_MIN(need, RLT_MAX(cap * 2, (uint64_t)1 << 20));
            char *bigger = grown <= SIZE_MAX ? rlt_realloc(buf, (size_t)grown) : NULL;
            if (!bigger) {
                rlt_free(buf);
                return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "%s: out of memory reading the data", path);
            }
            buf = bigger;
            cap = grown;
        }
        size_t got = fread(buf + len, 1, (size_t)(cap - len), f);
        len += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        rlt_free(buf);
        return rlt_fail(diag, RLT_STATUS_IO_ERROR, "%s: cannot read: %s", path, strerror(errno));
    }
    *out = buf;
    *out_len = len;
    return RLT_STATUS_OK;
}

rlt_status rlt_npy_load(const char *path, rlt_array **out, rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    char *header = NULL, *stream = NULL;
    rlt_array *a = NULL;
    char shape[256];
    FILE *f = fopen(path, "rb");
    if (!f) return rlt_fail(diag, RLT_STATUS_IO_ERROR, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0) {
        st = rlt_fail(diag, RLT_STATUS_IO_ERROR, "%s: cannot read: %s", path, strerror(errno));
        goto cleanup;
    }
    if (S_ISDIR(sb.st_mode)) {
        st = rlt_fail(diag, RLT_STATUS_IO_ERROR, "%s: cannot read: it is a directory", path);
        goto cleanup;
    }
    bool is_regular = S_ISREG(sb.st_mode);

    /* the preamble: magic, version, header length */
    unsigned char pre[NPY_MAGIC_LEN + 2 + 4];
    size_t got = fread(pre, 1, NPY_MAGIC_LEN + 2, f);
    if (got < NPY_MAGIC_LEN + 2 && ferror(f)) {
        st = rlt_fail(diag, RLT_STATUS_IO_ERROR, "%s: cannot read: %s", path, strerror(errno));
        goto cleanup;
    }
    if (got == 0) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s: the file is empty: not a .npy file", path);
        goto cleanup;
    }
    if (memcmp(pre, NPY_MAGIC, RLT_MIN(got, (size_t)NPY_MAGIC_LEN)) != 0) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                      "%s: not a .npy file: it does not start with NumPy's magic \\x93NUMPY", path);
        goto cleanup;
    }
    if (got < NPY_MAGIC_LEN + 2) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s: truncated: the file ends inside the .npy magic and version",
                      path);
        goto cleanup;
    }
    int major = pre[NPY_MAGIC_LEN], minor = pre[NPY_MAGIC_LEN + 1];
    if (major < 1 || major > 3 || minor != 0) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "%s: .npy format version %d.%d is not supported; rltune reads versions 1.0, 2.0 and 3.0", path,
                      major, minor);
        goto cleanup;
    }
    int len_bytes = major == 1 ? 2 : 4;
    if (!read_exact(f, pre + NPY_MAGIC_LEN + 2, (size_t)len_bytes)) {
        st = short_read(f, path, "the header's length", diag);
        goto cleanup;
    }
    uint64_t header_len = rlt_le_load(pre + NPY_MAGIC_LEN + 2, len_bytes);
    uint64_t data_at = NPY_MAGIC_LEN + 2 + (uint64_t)len_bytes + header_len;
    if (is_regular && (uint64_t)sb.st_size < data_at) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                      "%s: truncated: the header is %" PRIu64 " bytes long, the file ends %" PRIu64 " bytes into it",
                      path, header_len, (uint64_t)sb.st_size - (data_at - header_len));
        goto cleanup;
    }
    if (header_len > NPY_HEADER_MAX_BYTES) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "%s: the .npy header is %" PRIu64 " bytes long; rltune reads headers of up to %d bytes", path,
                      header_len, NPY_HEADER_MAX_BYTES);
        goto cleanup;
    }

    /* the header */
    if (!(header = rlt_malloc((size_t)header_len + 1))) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "%s: out of memory reading the header", path);
        goto cleanup;
    }
    if (!read_exact(f, header, (size_t)header_len)) {
        st = short_read(f, path, "the header", diag);
        goto cleanup;
    }
    header[header_len] = '\0';
    npy_header h;
    npy_parser ps = {.path = path, .text = header, .len = (size_t)header_len, .diag = diag};
    if ((st = parse_header(&ps, &h)) != RLT_STATUS_OK) goto cleanup;
    rlt_elem elem = RLT_ELEM_F32;
    if ((st = descr_to_elem(path, &h, &elem, diag)) != RLT_STATUS_OK) goto cleanup;
    if (h.rank > RLT_ARRAY_MAX_RANK) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s: the array has rank %d; rltune reads ranks 0 to %d",
                      path, h.rank, RLT_ARRAY_MAX_RANK);
        goto cleanup;
    }
    shape_text(h.rank, h.dims, shape, sizeof shape);
    int n_long_dims = 0;
    for (int i = 0; i < h.rank; i++) n_long_dims += h.dims[i] > 1;
    if (h.is_fortran_order && n_long_dims > 1) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "%s: the array of shape %s is in Fortran order (fortran_order: True); rltune reads C-order "
                      "arrays: save np.ascontiguousarray(a)",
                      path, shape);
        goto cleanup;
    }
    if (shape_is_too_large(h.rank, h.dims)) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "%s: the array of shape %s is too large: its dims (those of 0 aside) multiply to more than "
                      "2^40; rltune reads no larger arrays",
                      path, shape);
        goto cleanup;
    }
    int64_t n = shape_n_elems(h.rank, h.dims);
    uint64_t data_bytes = (uint64_t)n * rlt_elem_size(elem);

    /* the data: its size checked before anything is allocated for it */
    if (is_regular) {
        uint64_t held = (uint64_t)sb.st_size - data_at;
        if (held != data_bytes) {
            st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                          held < data_bytes ? "%s: truncated: the data of a %s %s array is %" PRIu64
                                              " bytes, the file holds %" PRIu64
                                            : "%s: the data of a %s %s array is %" PRIu64
                                              " bytes, the file holds %" PRIu64 ": bytes after the data",
                          path, shape, elem_numpy_name(elem), data_bytes, held);
            goto cleanup;
        }
    }
    uint64_t have = data_bytes;
    if (!is_regular && (st = read_stream(f, path, data_bytes, &stream, &have, diag)) != RLT_STATUS_OK) goto cleanup;
    if (have < data_bytes) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                      "%s: truncated: the data of a %s %s array is %" PRIu64 " bytes, the file holds %" PRIu64, path,
                      shape, elem_numpy_name(elem), data_bytes, have);
        goto cleanup;
    }
    if (!(a = array_alloc(elem, h.rank, h.dims, n, false))) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "%s: out of memory for a %s %s array", path, shape,
                      elem_numpy_name(elem));
        goto cleanup;
    }
    if (stream) memcpy(a->data, stream, (size_t)data_bytes);
    else if (!read_exact(f, a->data, (size_t)data_bytes)) {
        st = short_read(f, path, "the data (it shrank while read)", diag);
        goto cleanup;
    }
    if (fgetc(f) != EOF) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                      "%s: the data of a %s %s array is %" PRIu64 " bytes, more follow: bytes after the data", path,
                      shape, elem_numpy_name(elem), data_bytes);
        goto cleanup;
    }
    if (ferror(f)) {
        st = rlt_fail(diag, RLT_STATUS_IO_ERROR, "%s: cannot read: %s", path, strerror(errno));
        goto cleanup;
    }
    if (elem == RLT_ELEM_BOOL) {
        const unsigned char *b = a->data;
        for (int64_t i = 0; i < n; i++)
            if (b[i] > 1) {
                st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                              "%s: bool element %" PRId64 " is stored as %u: a bool is 0 or 1", path, i, b[i]);
                goto cleanup;
            }
    }
    *out = a;
    a = NULL;
cleanup:
    rlt_array_destroy(a);
    rlt_free(stream);
    rlt_free(header);
    fclose(f);
    return st;
}

/* ---- writing ------------------------------------------------------------ */

/* Writes all of buf to fd: false (errno set) when a write fails. */
static bool write_all(int fd, const void *buf, uint64_t n)
{
    const char *p = buf;
    while (n > 0) {
        size_t chunk = (size_t)RLT_MIN(n, (uint64_t)1 << 30);
        ssize_t w = write(fd, p, chunk);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (w == 0) errno = EIO;
            return false;
        }
        p += w;
        n -= (uint64_t)w;
    }
    return true;
}

/* The whole header np.save writes for this array (magic to newline) into
 * buf; its length. buf holds at least 1024 bytes. */
static size_t header_write(const rlt_array *a, unsigned char *buf)
{
    static const char *const descrs[] = {"<f4", "<i8", "<i4", "|b1"};
    char dict[512], shape[256];
    int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                       descrs[a->elem], shape_text(a->rank, a->dims, shape, sizeof shape));
    if (a->rank > 0) {
        /* room for the first dim to grow to NPY_GROWTH_AXIS_MAX_DIGITS digits */
        char first[32];
        int digits = snprintf(first, sizeof first, "%" PRId64, a->dims[0]);
        for (int i = digits; i < NPY_GROWTH_AXIS_MAX_DIGITS; i++) dict[len++] = ' ';
        dict[len] = '\0';
    }
    /* format 1.0 when the length fits its u16; the newline counts */
    size_t text_len = (size_t)len + 1;
    int len_bytes = 2;
    size_t pad = NPY_ALIGN_BYTES - (NPY_MAGIC_LEN + 2 + 2 + text_len) % NPY_ALIGN_BYTES;
    if (text_len + pad > 0xffff) {
        len_bytes = 4;
        pad = NPY_ALIGN_BYTES - (NPY_MAGIC_LEN + 2 + 4 + text_len) % NPY_ALIGN_BYTES;
    }
    size_t at = 0;
    memcpy(buf, NPY_MAGIC, NPY_MAGIC_LEN);
    at += NPY_MAGIC_LEN;
    buf[at++] = len_bytes == 2 ? 1 : 2;
    buf[at++] = 0;
    rlt_le_store(buf + at, text_len + pad, len_bytes);
    at += (size_t)len_bytes;
    memcpy(buf + at, dict, (size_t)len);
    at += (size_t)len;
    memset(buf + at, ' ', pad);
    at += pad;
    buf[at++] = '\n';
    RLT_ASSERT(at % NPY_ALIGN_BYTES == 0 && at <= 1024);
    return at;
}

rlt_status rlt_npy_save(const char *path, const rlt_array *a, rlt_diag *diag)
{
    if (!a) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s: no array to save", path);
    int64_t n = 0;
    char what[600];
    snprintf(what, sizeof what, "%s: cannot save the array", path);
    rlt_status st = shape_check(what, a->elem, a->rank, a->dims, &n, diag);
    if (st != RLT_STATUS_OK) return st;
    if (n > 0 && !a->data) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s: the array has no data", path);
    uint64_t data_bytes = (uint64_t)n * rlt_elem_size(a->elem);
    if (a->elem == RLT_ELEM_BOOL) {
        const unsigned char *b = a->data;
        for (int64_t i = 0; i < n; i++)
            if (b[i] > 1)
                return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                                "%s: cannot save the array: bool element %" PRId64 " is %u: a bool is 0 or 1", path, i,
                                b[i]);
    }
    unsigned char header[1024];
    size_t header_len = header_write(a, header);

    char tmp[PATH_MAX];
    int len = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (len < 0 || (size_t)len >= sizeof tmp)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s: the path is too long", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return rlt_fail(diag, RLT_STATUS_IO_ERROR, "%s: cannot create '%s': %s", path, tmp, strerror(errno));
    bool is_written = write_all(fd, header, header_len) && write_all(fd, a->data, data_bytes);
    int e = errno;
    if (close(fd) != 0 && is_written) {
        is_written = false;
        e = errno;
    }
    if (is_written && rename(tmp, path) != 0) {
        is_written = false;
        e = errno;
    }
    if (!is_written) {
        unlink(tmp);
        return rlt_fail(diag, RLT_STATUS_IO_ERROR, "%s: cannot write: %s", path, strerror(e));
    }
    return RLT_STATUS_OK;
}
