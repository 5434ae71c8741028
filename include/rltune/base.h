/*
 * rltune/base.h - what every part of rltune's public API shares: the
 * version, status codes, the diagnostics struct, freeing what rltune hands
 * out. Included by every other public header (rltune.h includes them all).
 */
#ifndef RLTUNE_BASE_H
#define RLTUNE_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of these headers (semantic versioning: a new minor version
 * adds to the API, a new major one changes it). CMake reads it from here. */
#define RLTUNE_VERSION_MAJOR 0
#define RLTUNE_VERSION_MINOR 1
#define RLTUNE_VERSION_PATCH 0
#define RLTUNE_VERSION "0.1.0"

/* Marks the functions librltune.so exports; everything else in it is
 * hidden. */
#if defined(__GNUC__)
#define RLT_API __attribute__((visibility("default")))
#else
#define RLT_API
#endif

/* The version of the library linked at run time ("0.1.0"), which may be
 * newer than the headers a program was compiled with. */
RLT_API const char *rlt_version(void);

/* Every fallible function returns one of these. RLT_STATUS_OK is zero. The
 * BUILD_* / RUN_* / WRONG_ANSWER codes are also the status of a measurement. */
typedef enum rlt_status {
    RLT_STATUS_OK = 0,
    RLT_STATUS_INVALID_ARGUMENT, /* bad user input: a value out of range, unknown name */
    RLT_STATUS_PARSE_ERROR,      /* text that does not follow its grammar */
    RLT_STATUS_ILLEGAL_SCHEDULE, /* a schedule step refused by its legality check */
    RLT_STATUS_IO_ERROR,         /* a file or process could not be read, written, started */
    RLT_STATUS_OUT_OF_MEMORY,
    RLT_STATUS_BUILD_ERROR,      /* the compiler rejected the generated source */
    RLT_STATUS_BUILD_TIMEOUT,    /* the compiler ran past its time limit */
    RLT_STATUS_RUN_ERROR,        /* the kernel crashed (signal) or could not be loaded */
    RLT_STATUS_RUN_TIMEOUT,      /* the kernel ran past its time limit */
    RLT_STATUS_WRONG_ANSWER,     /* the kernel's output differs from the reference */
    RLT_STATUS_INTERNAL,         /* a bug in rltune: please report it */
    RLT_STATUS_COUNT
} rlt_status;

/* A short upper-case name for every status ("OK", "RUN_TIMEOUT", ...). Never
 * NULL: out-of-range values give "UNKNOWN_STATUS". */
RLT_API const char *rlt_status_str(rlt_status status);

/* Parses a status name as printed by rlt_status_str. Returns RLT_STATUS_COUNT
 * when the name is unknown. */
RLT_API rlt_status rlt_status_from_str(const char *name);

/* Details of a failure, filled by the function that failed. Caller-owned; may
 * be passed as NULL where the caller does not want the message (the
 * long-lived handles also keep their last error: rlt_session_last_error,
 * rlt_db_last_error, rlt_env_last_error, rlt_experiment_last_error). */
typedef struct rlt_diag {
    rlt_status status;
    char message[1024]; /* names what was wrong, where, and what is accepted */
} rlt_diag;

/* Frees memory handed out by rltune (strings, arrays). NULL is a no-op. */
RLT_API void rlt_free(void *ptr);

/* The shortest of %.15g, %.16g and %.17g that reads back as exactly `v`,
 * for numbers written to files (rltune's JSON is written this way:
 * cJSON's printer writes 15 digits whenever they read back within a few
 * ulps, so a figure would change on its way through a file). cap >= 32. */
RLT_API void rlt_format_double(double v, char *buf, size_t cap);

#if defined(__GNUC__)
#define RLT_API_PRINTF(fmt_idx, arg_idx) __attribute__((format(printf, fmt_idx, arg_idx)))
#else
#define RLT_API_PRINTF(fmt_idx, arg_idx)
#endif

/* Records a failure in `diag` (may be NULL) and returns `status`, so that a
 * function can end with `return rlt_fail(diag, RLT_STATUS_..., "...", ...)`.
 * The first failure recorded wins: a caller adding context uses
 * rlt_diag_prefix instead. */
RLT_API rlt_status rlt_fail(rlt_diag *diag, rlt_status status, const char *fmt, ...) RLT_API_PRINTF(3, 4);

/* Puts "PREFIX: " in front of the message (where it came from: a file, an
 * option), keeping the status. NULL diag ok. */
RLT_API void rlt_diag_prefix(rlt_diag *diag, const char *fmt, ...) RLT_API_PRINTF(2, 3);

#ifdef __cplusplus
}
#endif
#endif /* RLTUNE_BASE_H */
