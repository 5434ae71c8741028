/*
 * core.c - diagnostics, the allocator and its fault hook, arenas, the RNG,
 * growable strings, hashing, files, clocks and logging.
 */
#include "core/core.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- status names ------------------------------------------------------- */

static const char *const status_names[RLT_STATUS_COUNT] = {
    [RLT_STATUS_OK] = "OK",
    [RLT_STATUS_INVALID_ARGUMENT] = "INVALID_ARGUMENT",
    [RLT_STATUS_PARSE_ERROR] = "PARSE_ERROR",
    [RLT_STATUS_ILLEGAL_SCHEDULE] = "ILLEGAL_SCHEDULE",
    [RLT_STATUS_IO_ERROR] = "IO_ERROR",
    [RLT_STATUS_OUT_OF_MEMORY] = "OUT_OF_MEMORY",
    [RLT_STATUS_BUILD_ERROR] = "BUILD_ERROR",
    [RLT_STATUS_BUILD_TIMEOUT] = "BUILD_TIMEOUT",
    [RLT_STATUS_RUN_ERROR] = "RUN_ERROR",
    [RLT_STATUS_RUN_TIMEOUT] = "RUN_TIMEOUT",
    [RLT_STATUS_WRONG_ANSWER] = "WRONG_ANSWER",
    [RLT_STATUS_INTERNAL] = "INTERNAL",
};

const char *rlt_version(void) { return RLTUNE_VERSION; }

const char *rlt_status_str(rlt_status status)
{
    if ((int)status < 0 || status >= RLT_STATUS_COUNT || !status_names[status])
        return "UNKNOWN_STATUS";
    return status_names[status];
}

rlt_status rlt_status_from_str(const char *name)
{
    for (int i = 0; i < RLT_STATUS_COUNT; i++)
        if (status_names[i] && name && strcmp(status_names[i], name) == 0) return (rlt_status)i;
    return RLT_STATUS_COUNT;
}

void rlt_assert_fail(const char *cond, const char *file, int line)
{
    fprintf(stderr, "rltune: internal error: assertion '%s' failed at %s:%d\n", cond, file, line);
    abort();
}

/* ---- diagnostics -------------------------------------------------------- */

rlt_status rlt_fail(rlt_diag *diag, rlt_status status, const char *fmt, ...)
{
    if (diag && diag->status == RLT_STATUS_OK) {
        diag->status = status;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(diag->message, sizeof diag->message, fmt, ap);
        va_end(ap);
    }
    return status;
}

rlt_status rlt_diag_keep(char *last_error, size_t cap, rlt_status st, const rlt_diag *d, rlt_diag *diag)
{
    if (st == RLT_STATUS_OK) return st;
    snprintf(last_error, cap, "%s", d && d->message[0] ? d->message : rlt_status_str(st));
    if (diag && diag != d && diag->status == RLT_STATUS_OK) *diag = *d;
    return st;
}

void rlt_diag_prefix(rlt_diag *diag, const char *fmt, ...)
{
    if (!diag) return;
    char prefix[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    size_t prefix_len = strlen(prefix);
    size_t cap = sizeof diag->message;
    if (prefix_len + 2 >= cap) return;
    memmove(diag->message + prefix_len + 2, diag->message, cap - prefix_len - 2);
    diag->message[cap - 1] = '\0';
    memcpy(diag->message, prefix, prefix_len);
    memcpy(diag->message + prefix_len, ": ", 2);
}

/* ---- allocation --------------------------------------------------------- */

static long alloc_fail_countdown; /* 0: off; k: the k-th next allocation fails */
static bool alloc_failing;

void rlt_alloc_fail_after(long n)
{
    alloc_fail_countdown = n;
    alloc_failing = false;
}

static bool alloc_should_fail(void)
{
    if (alloc_failing) return true;
    if (alloc_fail_countdown > 0 && --alloc_fail_countdown == 0) {
        alloc_failing = true;
        return true;
    }
    return false;
}

void *rlt_malloc(size_t size_bytes)
{
    if (alloc_should_fail()) return NULL;
    return malloc(size_bytes ? size_bytes : 1);
}

void *rlt_calloc(size_t n_items, size_t item_size_bytes)
{
    if (alloc_should_fail()) return NULL;
    if (n_items == 0 || item_size_bytes == 0) return calloc(1, 1);
    return calloc(n_items, item_size_bytes);
}

void *rlt_realloc(void *ptr, size_t size_bytes)
{
    if (alloc_should_fail()) return NULL;
    return realloc(ptr, size_bytes ? size_bytes : 1);
}

void rlt_free(void *ptr) { free(ptr); }

char *rlt_strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *copy = rlt_malloc(len + 1);
    if (!copy) return NULL;
    memcpy(copy, s, len);
    copy[len] = '\0';
    return copy;
}

char *rlt_strdup(const char *s) { return rlt_strndup(s, strlen(s)); }

/* ---- arena -------------------------------------------------------------- */

typedef struct arena_chunk {
    struct arena_chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} arena_chunk;

struct rlt_arena {
    arena_chunk *head;
};

enum { ARENA_CHUNK_BYTES = 16 * 1024 };

rlt_arena *rlt_arena_create(void) { return rlt_calloc(1, sizeof(rlt_arena)); }

void rlt_arena_destroy(rlt_arena *arena)
{
    if (!arena) return;
    for (arena_chunk *c = arena->head, *next; c; c = next) {
        next = c->next;
        rlt_free(c);
    }
    rlt_free(arena);
}

void *rlt_arena_alloc(rlt_arena *arena, size_t size_bytes)
{
    size_t need = (size_bytes + 15u) & ~(size_t)15u;
    arena_chunk *c = arena->head;
    if (!c || c->cap - c->used < need) {
        size_t cap = need > ARENA_CHUNK_BYTES ? need : ARENA_CHUNK_BYTES;
        c = rlt_malloc(sizeof(arena_chunk) + cap);
        if (!c) return NULL;
        c->used = 0;
        c->cap = cap;
        c->next = arena->head;
        arena->head = c;
    }
    void *p = c->data + c->used;
    c->used += need;
    memset(p, 0, need);
    return p;
}

char *rlt_arena_strdup(rlt_arena *arena, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = rlt_arena_alloc(arena, n);
    if (p) memcpy(p, s, n);
    return p;
}

/* ---- RNG ---------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void rlt_rng_seed(rlt_rng *rng, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) rng->s[i] = splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rlt_rng_u64(rlt_rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t rlt_rng_below(rlt_rng *rng, uint64_t n)
{
    RLT_ASSERT(n > 0);
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = rlt_rng_u64(rng);
    while (x >= limit);
    return x % n;
}

double rlt_rng_uniform(rlt_rng *rng) { return (double)(rlt_rng_u64(rng) >> 11) * 0x1.0p-53; }

/* ---- growable string ---------------------------------------------------- */

void rlt_str_init(rlt_str *s) { *s = (rlt_str){0}; }

void rlt_str_free(rlt_str *s)
{
    rlt_free(s->data);
    *s = (rlt_str){0};
}

void rlt_str_clear(rlt_str *s)
{
    s->len = 0;
    if (s->data) s->data[0] = '\0';
}

static bool str_reserve(rlt_str *s, size_t extra)
{
    if (s->has_failed) return false;
    if (s->len + extra + 1 <= s->cap) return true;
    size_t cap = s->cap ? s->cap : 256;
    while (cap < s->len + extra + 1) cap *= 2;
    char *data = rlt_realloc(s->data, cap);
    if (!data) {
        s->has_failed = true;
        return false;
    }
    s->data = data;
    s->cap = cap;
    return true;
}

void rlt_str_appendn(rlt_str *s, const char *text, size_t n)
{
    if (!str_reserve(s, n)) return;
    memcpy(s->data + s->len, text, n);
    s->len += n;
    s->data[s->len] = '\0';
}

void rlt_str_append(rlt_str *s, const char *text) { rlt_str_appendn(s, text, strlen(text)); }

void rlt_str_vprintf(rlt_str *s, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0 || !str_reserve(s, (size_t)n)) return;
    vsnprintf(s->data + s->len, (size_t)n + 1, fmt, ap);
    s->len += (size_t)n;
}

void rlt_str_printf(rlt_str *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rlt_str_vprintf(s, fmt, ap);
    va_end(ap);
}

void rlt_str_indent(rlt_str *s, int levels)
{
    for (int i = 0; i < levels; i++) rlt_str_appendn(s, "  ", 2);
}

char *rlt_str_take(rlt_str *s)
{
    if (s->has_failed) {
        rlt_str_free(s);
        return NULL;
    }
    if (!s->data && str_reserve(s, 0)) s->data[0] = '\0';
    if (s->has_failed) {
        rlt_str_free(s);
        return NULL;
    }
    char *data = s->data;
    *s = (rlt_str){0};
    return data;
}

/* ---- hashing ------------------------------------------------------------ */

uint64_t rlt_hash_bytes(uint64_t seed, const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t h = seed;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

void rlt_le_store(unsigned char *p, uint64_t v, int n_bytes)
{
    RLT_ASSERT(n_bytes >= 1 && n_bytes <= 8);
    for (int i = 0; i < n_bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

uint64_t rlt_le_load(const unsigned char *p, int n_bytes)
{
    RLT_ASSERT(n_bytes >= 1 && n_bytes <= 8);
    uint64_t v = 0;
    for (int i = 0; i < n_bytes; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

uint64_t rlt_hash_str(uint64_t seed, const char *s) { return rlt_hash_bytes(seed, s, strlen(s)); }

/* ---- numbers in text ------------------------------------------------------ */

bool rlt_parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (!*s || strlen(s) > 20) return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return false;
        uint64_t digit = (uint64_t)(*s - '0');
        if (v > (UINT64_MAX - digit) / 10) return false;
        v = v * 10 + digit;
    }
    *out = v;
    return true;
}

/* ---- files and clocks --------------------------------------------------- */

rlt_status rlt_file_read(const char *path, char **out_text, size_t *out_len, rlt_diag *diag)
{
    *out_text = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot open '%s': %s", path, strerror(errno));
    rlt_str s;
    rlt_str_init(&s);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        rlt_str_appendn(&s, buf, n);
        if (s.len > RLT_FILE_READ_MAX_BYTES) {
            /* /dev/zero or a file that is not what it claims: never read forever */
            fclose(f);
            rlt_str_free(&s);
            return rlt_fail(diag, RLT_STATUS_IO_ERROR, "'%s' is larger than %d MiB: not read", path,
                            RLT_FILE_READ_MAX_BYTES >> 20);
        }
    }
    bool had_error = ferror(f);
    int saved_errno = errno;
    fclose(f);
    if (had_error) {
        rlt_str_free(&s);
        return rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot read '%s': %s", path, strerror(saved_errno));
    }
    size_t len = s.len;
    char *text = rlt_str_take(&s);
    if (!text) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading '%s'", path);
    if (out_len) *out_len = len;
    *out_text = text;
    return RLT_STATUS_OK;
}

rlt_status rlt_text_file_read(const char *path, char **out_text, rlt_diag *diag)
{
    size_t len = 0;
    *out_text = NULL;
    rlt_status st = rlt_file_read(path, out_text, &len, diag);
    if (st != RLT_STATUS_OK) return st;
    if (strlen(*out_text) != len) {
        rlt_free(*out_text);
        *out_text = NULL;
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s: holds a NUL byte: not a text file", path);
    }
    return RLT_STATUS_OK;
}

rlt_status rlt_file_write(const char *path, const char *data, size_t len, rlt_diag *diag)
{
    char tmp[PATH_MAX];
    int n = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof tmp)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "path too long: '%s'", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot create '%s': %s", tmp, strerror(errno));
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, data + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            int e = errno;
            close(fd);
            unlink(tmp);
            return rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot write '%s': %s", path, strerror(e));
        }
        done += (size_t)w;
    }
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot write '%s': %s", path, strerror(e));
    }
    return RLT_STATUS_OK;
}

rlt_status rlt_mkdir_p(const char *path, rlt_diag *diag)
{
    char buf[PATH_MAX];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof buf)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "bad directory path '%s'", path);
    memcpy(buf, path, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (buf[i] != '/' && buf[i] != '\0') continue;
        char saved = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot create directory '%s': %s", buf, strerror(errno));
        buf[i] = saved;
    }
    return RLT_STATUS_OK;
}

uint64_t rlt_time_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- logging ------------------------------------------------------------ */

static rlt_log_level log_threshold(void)
{
    const char *env = getenv("RLTUNE_LOG");
    if (!env) return RLT_LOG_WARN;
    if (strcmp(env, "error") == 0) return RLT_LOG_ERROR;
    if (strcmp(env, "info") == 0) return RLT_LOG_INFO;
    if (strcmp(env, "debug") == 0) return RLT_LOG_DEBUG;
    return RLT_LOG_WARN;
}

void rlt_log(rlt_log_level level, const char *fmt, ...)
{
    if (level > log_threshold()) return;
    static const char *const names[] = {"error", "warning", "info", "debug"};
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rltune: %s: ", names[level]);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ---- parsing helpers ---------------------------------------------------- */

void rlt_format_double(double v, char *buf, size_t cap)
{
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, cap, "%.*g", digits, v);
        if (strtod(buf, NULL) == v) return;
    }
}

bool rlt_parse_i64(const char *s, int64_t *out)
{
    if (!s || !*s) return false;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0' || end == s || isspace((unsigned char)*s)) return false;
    *out = (int64_t)v;
    return true;
}

bool rlt_is_ident_start(int c) { return isalpha(c) != 0; }
bool rlt_is_ident_char(int c) { return isalnum(c) != 0; }
