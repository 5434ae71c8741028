/*
 * core.h - the base every module stands on: diagnostics, the allocator with
 * its fault hook, arenas, a seeded RNG, a growable string, hashing, clocks
 * and logging. Depends on libc only.
 */
#ifndef RLT_CORE_H
#define RLT_CORE_H

#include "rltune/base.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- assertions: for bugs only, never for bad user input ---------------- */

#define RLT_ASSERT(cond)                                                      \
    do {                                                                      \
        if (!(cond)) rlt_assert_fail(#cond, __FILE__, __LINE__);              \
    } while (0)

_Noreturn void rlt_assert_fail(const char *cond, const char *file, int line);

#define RLT_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define RLT_MIN(a, b) ((a) < (b) ? (a) : (b))
#define RLT_MAX(a, b) ((a) > (b) ? (a) : (b))

#if defined(__GNUC__)
#define RLT_PRINTF(fmt_idx, arg_idx) __attribute__((format(printf, fmt_idx, arg_idx)))
#else
#define RLT_PRINTF(fmt_idx, arg_idx)
#endif

/* ---- diagnostics -------------------------------------------------------- */

/* rlt_fail and rlt_diag_prefix are public (rltune/base.h). */

/* What a handle that keeps its last error (rlt_session_last_error and the
 * like) does with a call's outcome: when st failed, d's message (the
 * status's name when d is NULL or empty) goes into last_error (cap bytes),
 * and d goes to the caller's diag when that is another one holding no
 * message yet (as rlt_fail, the first failure wins). Returns st. */
rlt_status rlt_diag_keep(char *last_error, size_t cap, rlt_status st, const rlt_diag *d, rlt_diag *diag);

/* ---- allocation --------------------------------------------------------- */

/* All heap memory goes through these. They return NULL on failure (callers
 * report RLT_STATUS_OUT_OF_MEMORY); sizes of zero are allowed. */
void *rlt_malloc(size_t size_bytes);
void *rlt_calloc(size_t n_items, size_t item_size_bytes);
void *rlt_realloc(void *ptr, size_t size_bytes);
char *rlt_strdup(const char *s);
char *rlt_strndup(const char *s, size_t n);
/* rlt_free is declared in rltune/base.h. */

/* Test hook: make the Nth allocation from now on fail (1 = the next one), and
 * every one after it until reset; n = 0 turns failures off. Process-global,
 * for single-threaded tests only. */
void rlt_alloc_fail_after(long n);

/* ---- arena: many small objects released as one -------------------------- */

typedef struct rlt_arena rlt_arena;

rlt_arena *rlt_arena_create(void);                    /* NULL when out of memory */
void rlt_arena_destroy(rlt_arena *arena);             /* frees everything; NULL ok */
void *rlt_arena_alloc(rlt_arena *arena, size_t size_bytes); /* zeroed, 16-aligned; NULL on OOM */
char *rlt_arena_strdup(rlt_arena *arena, const char *s);

/* ---- RNG: xoshiro256** seeded through splitmix64 ------------------------ */

typedef struct rlt_rng {
    uint64_t s[4];
} rlt_rng;

void rlt_rng_seed(rlt_rng *rng, uint64_t seed);
uint64_t rlt_rng_u64(rlt_rng *rng);
/* Uniform in [0, n); n > 0. Unbiased (rejection sampling). */
uint64_t rlt_rng_below(rlt_rng *rng, uint64_t n);
/* Uniform in [0, 1). */
double rlt_rng_uniform(rlt_rng *rng);

/* ---- growable string ---------------------------------------------------- */

/* A NUL-terminated string that grows as text is appended. An allocation
 * failure sets has_failed; later appends are ignored, so a builder of text
 * checks once at the end. */
typedef struct rlt_str {
    char *data;
    size_t len;
    size_t cap;
    bool has_failed;
} rlt_str;

void rlt_str_init(rlt_str *s);
void rlt_str_free(rlt_str *s);
void rlt_str_clear(rlt_str *s);
void rlt_str_append(rlt_str *s, const char *text);
void rlt_str_appendn(rlt_str *s, const char *text, size_t n);
void rlt_str_printf(rlt_str *s, const char *fmt, ...) RLT_PRINTF(2, 3);
void rlt_str_vprintf(rlt_str *s, const char *fmt, va_list ap);
void rlt_str_indent(rlt_str *s, int levels); /* two spaces a level */
/* Hands the text to the caller (free with rlt_free) and resets `s`. Returns
 * NULL if any append failed. */
char *rlt_str_take(rlt_str *s);

/* ---- hashing ------------------------------------------------------------ */

/* 64-bit FNV-1a: stable across runs and machines, used for structural hashes
 * and cache keys. `seed` chains hashes (pass RLT_HASH_SEED to start). */
#define RLT_HASH_SEED 0xcbf29ce484222325ull
uint64_t rlt_hash_bytes(uint64_t seed, const void *data, size_t n);
uint64_t rlt_hash_str(uint64_t seed, const char *s);

/* ---- little-endian integers in bytes (the binary file formats) ----------- */

/* The low n_bytes (1..8) of v into p[0 .. n_bytes-1], least significant
 * first; and back. */
void rlt_le_store(unsigned char *p, uint64_t v, int n_bytes);
uint64_t rlt_le_load(const unsigned char *p, int n_bytes);

/* ---- numbers in text --------------------------------------------------- */

/* A decimal whole number of digits only ("0" to "18446744073709551615", no
 * sign, no spaces) into *out; false (out unchanged) for anything else,
 * overflow included. Seeds travel as such text where JSON numbers would
 * lose precision. */
bool rlt_parse_u64(const char *s, uint64_t *out);

/* ---- files and clocks --------------------------------------------------- */

/* Reads a whole file into a NUL-terminated buffer (free with rlt_free).
 * Files (or devices) larger than RLT_FILE_READ_MAX_BYTES are refused. */
#define RLT_FILE_READ_MAX_BYTES (64 << 20)
rlt_status rlt_file_read(const char *path, char **out_text, size_t *out_len, rlt_diag *diag);
/* rlt_file_read for text: a file holding a NUL byte is PARSE_ERROR
 * ("PATH: holds a NUL byte: not a text file"), so that string parsers see
 * all of it. */
rlt_status rlt_text_file_read(const char *path, char **out_text, rlt_diag *diag);
/* Writes atomically: to "<path>.tmp.<pid>" then rename. */
rlt_status rlt_file_write(const char *path, const char *data, size_t len, rlt_diag *diag);
/* Creates a directory and its parents (mkdir -p). */
rlt_status rlt_mkdir_p(const char *path, rlt_diag *diag);

uint64_t rlt_time_ns(void); /* CLOCK_MONOTONIC, nanoseconds */

/* ---- logging ------------------------------------------------------------ */

typedef enum rlt_log_level {
    RLT_LOG_ERROR = 0,
    RLT_LOG_WARN,
    RLT_LOG_INFO,
    RLT_LOG_DEBUG
} rlt_log_level;

/* Messages at or below the level in $RLTUNE_LOG (error|warn|info|debug,
 * default warn) go to stderr. */
void rlt_log(rlt_log_level level, const char *fmt, ...) RLT_PRINTF(2, 3);

/* ---- small parsing helpers shared by the text formats ------------------- */

/* Parses a whole decimal integer (optional sign); false if `s` is not one or
 * it overflows int64. */
bool rlt_parse_i64(const char *s, int64_t *out);
/* rlt_format_double (exact number text) is public: rltune/base.h. */
bool rlt_is_ident_start(int c);
bool rlt_is_ident_char(int c);

#endif /* RLT_CORE_H */
