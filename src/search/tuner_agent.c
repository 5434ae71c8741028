/*
 * tuner_agent.c - the learning tuners' agents in agent files
 * (nn/agent_file.h; docs/tuners.md, "Saved agents"): the file of a tuner
 * records the knobs of the space it learned on (rlt_tuner_agent_create)
 * and is checked against the space it is loaded into
 * (rlt_tuner_agent_check_knobs); rlt_tuner_save / rlt_tuner_load write and
 * read a whole agent through the tuner's save / load hooks.
 *
 * The knobs section is text, one line "NAME SIZE\n" per knob in the
 * space's order (docs/formats.md).
 */
#include "nn/agent_file.h"
#include "search/tuner.h"

#include <stdio.h>
#include <string.h>

/* ---- the knobs --------------------------------------------------------------- */

rlt_status rlt_tuner_agent_create(const char *tuner, const rlt_space *space, rlt_agent_file **out, rlt_diag *diag)
{
    *out = NULL;
    rlt_str knobs;
    rlt_str_init(&knobs);
    for (int k = 0; space && k < space->n_knobs; k++)
        rlt_str_printf(&knobs, "%s %d\n", space->knobs[k].name, space->knobs[k].n_choices);
    rlt_status st = knobs.has_failed ? rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "agent file: out of memory")
                                     : rlt_agent_file_create(tuner, knobs.data, out, diag);
    rlt_str_free(&knobs);
    return st;
}

rlt_status rlt_tuner_agent_check_knobs(const rlt_agent_file *f, const rlt_space *space, bool is_size_needed,
                                       rlt_diag *diag)
{
    const char *p = rlt_agent_file_knobs(f);
    const char *source = rlt_agent_file_source(f);
    int k = 0;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t line_len = eol ? (size_t)(eol - p) : strlen(p);
        char name[128];
        int size = 0;
        const char *sp = memchr(p, ' ', line_len);
        size_t name_len = sp ? (size_t)(sp - p) : line_len;
        if (!sp || name_len >= sizeof name || sscanf(sp + 1, "%d", &size) != 1)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "agent file '%s': knob line %d is not 'NAME SIZE'",
                            source, k + 1);
        memcpy(name, p, name_len);
        name[name_len] = '\0';
        if (k >= space->n_knobs)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "agent file '%s': the agent learned on more knobs than this space's %d (from %s on)",
                            source, space->n_knobs, name);
        const rlt_knob *kn = &space->knobs[k];
        if (strcmp(name, kn->name) != 0)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "agent file '%s': knob %d is %s, this space's is %s (an agent moves between workloads "
                            "of one op kind)",
                            source, k, name, kn->name);
        if (is_size_needed && size != kn->n_choices)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "agent file '%s': knob %s had %d choices, this space's has %d (this tuner's agent "
                            "needs the same choices)",
                            source, name, size, kn->n_choices);
        k++;
        p += line_len + (eol ? 1 : 0);
    }
    if (k != space->n_knobs)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "agent file '%s': the agent learned on %d knobs, this space has %d", source, k,
                        space->n_knobs);
    return RLT_STATUS_OK;
}

/* ---- a tuner's agent -------------------------------------------------------- */

bool rlt_tuner_has_agent(const rlt_tuner *t) { return t->ops->save && t->ops->load; }

rlt_status rlt_tuner_save(const rlt_tuner *t, const char *path, rlt_diag *diag)
{
    if (!rlt_tuner_has_agent(t))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "tuner %s has no agent to save (the learning tuners are ga-dqn, dqn, bandit and ppo)",
                        t->ops->name);
    rlt_agent_file *f = NULL;
    rlt_status st = rlt_tuner_agent_create(t->ops->name, t->space, &f, diag);
    if (st == RLT_STATUS_OK) st = t->ops->save(t, f, diag);
    if (st == RLT_STATUS_OK) st = rlt_agent_file_save(f, path, diag);
    rlt_agent_file_destroy(f);
    return st;
}

rlt_status rlt_tuner_load(rlt_tuner *t, const char *path, rlt_diag *diag)
{
    if (!rlt_tuner_has_agent(t))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "tuner %s has no agent to load (the learning tuners are ga-dqn, dqn, bandit and ppo)",
                        t->ops->name);
    rlt_agent_file *f = NULL;
    rlt_status st = rlt_agent_file_load(path, &f, diag);
    if (st != RLT_STATUS_OK) return st;
    if (strcmp(rlt_agent_file_tuner(f), t->ops->name) != 0)
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "agent file '%s' holds a %s agent, not a %s one", path,
                      rlt_agent_file_tuner(f), t->ops->name);
    else
        st = t->ops->load(t, f, diag);
    rlt_agent_file_destroy(f);
    return st;
}
