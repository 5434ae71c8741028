/*
 * agent_file.h - a learning tuner saved to a file (`rltune tune --agent-out`)
 * and loaded into a new run (`--agent-in`), so that an agent trained on
 * earlier workloads starts the next one (ktune's transfer between layers).
 *
 * An agent file is a set of named sections in one versioned binary file
 * (docs/formats.md, "Agent files"): the tuner's name and the knobs of the
 * space it learned on, then what the tuner chooses to keep: networks with
 * their optimiser state (nn weights bytes), numbers, raw bytes. The tuners
 * write and read their own sections (the save / load hooks of
 * rlt_tuner_ops); this container only checks the file's integrity.
 *
 * Ownership: an rlt_agent_file owns copies of everything put into it;
 * getters hand out new objects (networks) or borrowed views that live as
 * long as the file object.
 */
#ifndef RLT_AGENT_FILE_H
#define RLT_AGENT_FILE_H

#include "nn/nn.h"
#include "space/space.h"

#define RLT_AGENT_FILE_VERSION 1
#define RLT_AGENT_FILE_MAX_SECTIONS 256
#define RLT_AGENT_FILE_MAX_NAME 64 /* bytes of a section's name */

typedef struct rlt_agent_file rlt_agent_file;

/* A new, empty file for tuner `tuner` that learned on `space` (the knobs'
 * names and sizes are recorded; NULL: an agent of no knob space, such as a
 * LoopTune policy, with an empty knobs section). Errors: OUT_OF_MEMORY. */
rlt_status rlt_agent_file_create(const char *tuner, const rlt_space *space, rlt_agent_file **out, rlt_diag *diag);
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

/* Checks that `space` has the knobs the agent learned on: the same number,
 * in the same order, with the same names, and with `is_size_needed` the same
 * number of choices each (agents whose inputs and outputs do not depend on
 * the knobs' sizes, such as the -1/0/+1 walkers, move between workloads of
 * one op kind whose split factors differ). Errors: INVALID_ARGUMENT naming
 * the first difference. */
rlt_status rlt_agent_file_check_knobs(const rlt_agent_file *f, const rlt_space *space, bool is_size_needed,
                                      rlt_diag *diag);

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
