/*
 * agent_file.h - the agent file: what a learner keeps between runs, as a
 * set of named sections in one versioned, checksummed binary file
 * (docs/formats.md, "Agent files"). The learning tuners save their agents
 * in it (`rltune tune --agent-out` / `--agent-in`: search/tuner_agent.c),
 * and a LoopTune policy is one (src/policy).
 *
 * Two sections are always there: "tuner", the name of what saved the file
 * (a tuner's name, or "policy"), and "knobs", the knobs of the space it
 * learned on as text that the saver writes and checks (search/tuner_agent.c;
 * empty for an agent of no knob space). Then what the saver chooses to
 * keep: networks with their optimiser state (nn weights bytes), numbers,
 * raw bytes. This container knows nothing of spaces or tuners: it checks
 * the file's integrity only.
 *
 * Ownership: an rlt_agent_file owns copies of everything put into it;
 * getters hand out new objects (networks) or borrowed views that live as
 * long as the file object.
 */
#ifndef RLT_AGENT_FILE_H
#define RLT_AGENT_FILE_H

#include "nn/nn.h"

#define RLT_AGENT_FILE_VERSION 1
#define RLT_AGENT_FILE_MAX_SECTIONS 256
#define RLT_AGENT_FILE_MAX_NAME 64 /* bytes of a section's name */

typedef struct rlt_agent_file rlt_agent_file;

/* A new, empty file saved by `tuner` (copied into the "tuner" section),
 * whose "knobs" section is `knobs` (copied; NULL or "": an agent of no knob
 * space, such as a LoopTune policy). Errors: OUT_OF_MEMORY. */
rlt_status rlt_agent_file_create(const char *tuner, const char *knobs, rlt_agent_file **out, rlt_diag *diag);
void rlt_agent_file_destroy(rlt_agent_file *f); /* NULL ok */

/* Adds a section (copied). Names are 1..RLT_AGENT_FILE_MAX_NAME printable
 * ASCII bytes, unique in a file. Errors: INVALID_ARGUMENT (a bad or
 * repeated name, too many sections), OUT_OF_MEMORY. */
rlt_status rlt_agent_file_put_bytes(rlt_agent_file *f, const char *name, const void *data, size_t len,
                                    rlt_diag *diag);
rlt_status rlt_agent_file_put_real(rlt_agent_file *f, const char *name, double v, rlt_diag *diag);
/* A network and, when adam is not NULL, its optimiser state. */
rlt_status rlt_agent_file_put_mlp(rlt_agent_file *f, const char *name, const rlt_mlp *m, const rlt_adam *adam,
                                  rlt_diag *diag);

/* Writes f to `path` atomically. Errors: IO_ERROR naming the file,
 * OUT_OF_MEMORY. */
rlt_status rlt_agent_file_save(const rlt_agent_file *f, const char *path, rlt_diag *diag);

/* Reads a file rlt_agent_file_save wrote. Errors: IO_ERROR (unreadable),
 * PARSE_ERROR for anything else than a version-1 agent file with its
 * checksum (wrong magic, other version, truncated, trailing bytes, a bad or
 * repeated section name, a checksum mismatch, no tuner or knobs section):
 * the message names the file and what was wrong. OUT_OF_MEMORY. */
rlt_status rlt_agent_file_load(const char *path, rlt_agent_file **out, rlt_diag *diag);
/* The same from bytes; `source` names them in messages. */
rlt_status rlt_agent_file_load_bytes(const char *bytes, size_t len, const char *source, rlt_agent_file **out,
                                     rlt_diag *diag);

/* The tuner that saved the file (borrowed) and where it came from (the
 * path it was loaded from, or "<new>"). */
const char *rlt_agent_file_tuner(const rlt_agent_file *f);
const char *rlt_agent_file_source(const rlt_agent_file *f);

/* The "knobs" section's text (borrowed, NUL-terminated; "" when empty). */
const char *rlt_agent_file_knobs(const rlt_agent_file *f);

/* Whether the file has a section `name`. */
bool rlt_agent_file_has(const rlt_agent_file *f, const char *name);

/* Reads section `name`. Errors: INVALID_ARGUMENT when the file has no such
 * section or it is not of the kind asked for (a real is 8 bytes, a network
 * a weights file); PARSE_ERROR from the weights reader; OUT_OF_MEMORY. */
rlt_status rlt_agent_file_get_bytes(const rlt_agent_file *f, const char *name, const char **out_data,
                                    size_t *out_len, rlt_diag *diag);
rlt_status rlt_agent_file_get_real(const rlt_agent_file *f, const char *name, double *out, rlt_diag *diag);
/* A new network (and optimiser, when out_adam is not NULL: NULL if none was
 * saved), owned by the caller. With `want` not NULL the network must have
 * that spec (INVALID_ARGUMENT naming both shapes otherwise). */
rlt_status rlt_agent_file_get_mlp(const rlt_agent_file *f, const char *name, const rlt_mlp_spec *want,
                                  rlt_mlp **out, rlt_adam **out_adam, rlt_diag *diag);

#endif /* RLT_AGENT_FILE_H */
