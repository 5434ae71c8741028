/*
 * tuner.h - the tuner interface (AutoTVM's next_batch / update) and the
 * tuners that need no model: random, grid and ga.
 *
 * A tuner proposes configurations of a space in batches and learns from the
 * measured scores (GFLOP/s, 0 for a failed measurement). It never proposes
 * a configuration twice, and proposes only valid ones (rlt_space_is_valid).
 * Every random choice comes from the tuner's own RNG, seeded at creation:
 * the same seed and the same scores give the same proposals.
 */
#ifndef RLT_TUNER_H
#define RLT_TUNER_H

#include "rltune/session.h" /* rlt_tuner_names */
#include "space/space.h"

typedef struct rlt_tuner rlt_tuner;

typedef struct rlt_tuner_opts {
    uint64_t seed;
    /* every tuner: configurations another proposer offers before this
     * tuner's own (a session's queue of seed configurations, session.h):
     * marked visited before the tuner's init, so that its own first draws
     * (ga's population) avoid them. Read at create. */
    int n_claimed;
    const rlt_config *claimed_configs;
    /* ga */
    int population;       /* 0 = min(64, |space|) */
    int elite;            /* 0 = 3 */
    double mutation_prob; /* 0 = 0.1 */
    /* xgb, xgb-rank (AutoTVM's XGBTuner defaults) */
    int plan_size;        /* configurations planned per model fit; 0 = 64 */
    int fit_every;        /* measurements between fits, <= plan_size; 0 = min(16, plan_size) */
    int sa_chains;        /* simulated-annealing walkers; 0 = 128 */
    int sa_iterations;    /* at most; 0 = 500 (stops after 50 without a new top plan) */
    /* xgb, xgb-rank, ppo: the cost model's loss, "rank", "reg" or
     * "reg-weighted" (cost_model.h); NULL = the tuner's own: reg for xgb,
     * rank for xgb-rank; for ppo reg-weighted on a space it scores whole
     * (ppo_score_whole), rank on one it walks */
    const char *cost_loss;
    /* xgb, xgb-rank: a warm start from other workloads (search/transfer.h):
     * n_transfer rows of the space's feature length and their scores in
     * [0, 1]; copied at create. The model is trained on them before the
     * first proposal and on them plus the run's own measurements after. */
    int n_transfer;
    const float *transfer_xs;
    const double *transfer_ys;
    /* bandit (ktune's one-step contextual bandit, PPO-clip; docs/tuners.md) */
    double bandit_lr;           /* Adam's learning rate; 0 = 1e-3 */
    double bandit_clip;         /* PPO's ratio clip; 0 = 0.2 */
    int bandit_epochs;          /* passes over each rollout (16+ reported rows); 0 = 3 */
    int bandit_minibatch;       /* rows per gradient step; 0 = 32 */
    double bandit_entropy_coef; /* entropy bonus; 0 = 0.01, < 0 = none */
    /* dqn (ktune's multi-step DQN, one 3-way Q-head per knob; docs/tuners.md) */
    int dqn_horizon;       /* steps per episode; 0 = 20 */
    const char *dqn_reset; /* episode start: "zeros", "random", "median"; NULL = "random" */
    int dqn_walkers;       /* parallel episodes; 0 = the largest batch asked for (at most 256) */
    double dqn_gamma;      /* discount, < 1; 0 = 0.9 */
    double dqn_lr;         /* Adam's learning rate; 0 = 1e-3 */
    int dqn_hidden;        /* units in each of the two ReLU layers; 0 = 64 */
    int dqn_minibatch;     /* transitions per gradient step; 0 = 32 */
    int dqn_replay;        /* replay buffer capacity (transitions); 0 = 10000 */
    int dqn_target_every;  /* gradient steps between target-network copies; 0 = 100 */
    double dqn_eps_end;    /* final per-knob exploration rate; 0 = 0.05 */
    int dqn_eps_decay;     /* proposals over which it falls linearly from 1; 0 = 300 */
    int dqn_train_steps;   /* gradient steps per new transition; 0 = 2 */
    /* ga-dqn (GA-DQN's published settings; docs/tuners.md), besides ga's
     * population and elite; mutation_prob is not used */
    double ga_dqn_lr;            /* Adam's learning rate; 0 = 1e-3 */
    double ga_dqn_gamma;         /* discount, < 1; 0 = 0.95 */
    double ga_dqn_eps_decay;     /* epsilon's factor per learning step, <= 1; 0 = 0.99 */
    double ga_dqn_eps_min;       /* epsilon's floor, <= 1; 0 = 0.1 */
    int ga_dqn_replay;           /* replay buffer capacity (transitions); 0 = 10000 */
    int ga_dqn_minibatch;        /* transitions per learning step; 0 = 64 */
    int ga_dqn_learn_start;      /* transitions before the first learning step; 0 = 100 */
    int ga_dqn_target_every;     /* transitions between target-network copies; 0 = 200 */
    double ga_dqn_grad_clip;     /* gradient-norm clip; 0 = 10 */
    double ga_dqn_best_bonus;    /* reward factor for a new best; 0 = 5 */
    int ga_dqn_fresh;            /* not 0: untrained networks (the published GA-DQN); 0 = the
                                    agents built into the library (models/ga_dqn.rla) */
    /* ppo (Chameleon: PPO walkers over the cost model, k-means adaptive
     * sampling; docs/tuners.md); n_transfer etc. above warm-start its model */
    double ppo_lr;           /* Adam's learning rate of the actor-critic; 0 = 1e-3 */
    int ppo_epochs;          /* passes over each segment of walker steps; 0 = 3 */
    int ppo_minibatch;       /* transitions per gradient step; 0 = 32 */
    double ppo_gamma;        /* discount, < 1; 0 = 0.9 */
    double ppo_lambda;       /* GAE's lambda, <= 1; 0 = 0.99 */
    double ppo_clip;         /* PPO's ratio clip, < 1; 0 = 0.2 */
    double ppo_entropy_coef; /* entropy bonus; 0 = 0.3, < 0 = none */
    int ppo_walkers;         /* parallel walkers over the cost model; 0 = 128 */
    int ppo_episode_steps;   /* walker steps per episode (random restart after); 0 = 500 */
    int ppo_explore_steps;   /* walker steps per exploration of a fitted model, at most; 0 = 100 */
    int ppo_stall_steps;     /* an exploration stops after this many steps without a new top candidate; 0 = 50 */
    int ppo_score_whole;     /* spaces of at most this many configurations are scored whole, not walked; 0 = 4096 */
} rlt_tuner_opts;

/* ---- hyper-parameters by name (tuner_opts.c) ----------------------------
 *
 * Each settable field of rlt_tuner_opts has a name (the field's), a type,
 * the tuners it applies to, and its default; `rltune tuners` prints them.
 * The setters check a value's syntax (whole numbers >= 1, positive finite
 * reals, or a choice); the tuner checks the rest at rlt_tuner_create. */
typedef enum rlt_tuner_opt_type {
    RLT_TUNER_OPT_INT,          /* int, >= 1 */
    RLT_TUNER_OPT_REAL,         /* double, > 0 */
    RLT_TUNER_OPT_REAL_OR_NONE, /* double, >= 0; 0 (none) is stored as -1 */
    RLT_TUNER_OPT_CHOICE        /* const char *, one of `choices` (static strings) */
} rlt_tuner_opt_type;

typedef struct rlt_tuner_opt_info {
    const char *name;   /* "dqn_horizon" */
    rlt_tuner_opt_type type;
    size_t offset;      /* of the field in rlt_tuner_opts */
    const char *tuners; /* the tuners that read it, space-separated: "ga ga-dqn" */
    const char *def;    /* the default, as text */
    const char *help;   /* one line */
    const char *const *choices; /* RLT_TUNER_OPT_CHOICE: the accepted values, NULL-terminated */
} rlt_tuner_opt_info;

int rlt_tuner_opt_count(void);
const rlt_tuner_opt_info *rlt_tuner_opt_at(int i); /* 0 <= i < count (asserted); static */
const rlt_tuner_opt_info *rlt_tuner_opt_find(const char *key); /* NULL when unknown */
/* True when `tuner` reads the option. */
bool rlt_tuner_opt_applies(const rlt_tuner_opt_info *info, const char *tuner);

/* Sets option `key` of o from its text. Errors (INVALID_ARGUMENT): an
 * unknown key, a value of the wrong syntax or range; the message names the
 * option and the value. o is unchanged on error. */
rlt_status rlt_tuner_opts_set(rlt_tuner_opts *o, const char *key, const char *value, rlt_diag *diag);

/* Sets every member of the JSON object `obj` (numbers or strings) as
 * rlt_tuner_opts_set does. With `tuner` not NULL, an option that tuner does
 * not read is an error too (a typo or a misplaced setting must not pass
 * silently). `where` prefixes messages ("exp.json: tuners[1].options"),
 * followed by ".key". Stops at the first error; members before it stay set. */
struct cJSON;
rlt_status rlt_tuner_opts_set_json(rlt_tuner_opts *o, const char *tuner, const struct cJSON *obj, const char *where,
                                   rlt_diag *diag);

/* rlt_tuner_names (rltune/session.h) lists the tuners rlt_tuner_create
 * knows. */

/* What a tuner can do besides proposing, from the tuner table. */
typedef enum rlt_tuner_flag {
    RLT_TUNER_HAS_AGENT = 1u << 0,     /* saves and loads what it learned (rlt_tuner_save / rlt_tuner_load) */
    RLT_TUNER_USES_TRANSFER = 1u << 1  /* its cost model warm-starts from other workloads' records (n_transfer) */
} rlt_tuner_flag;

/* Whether rlt_tuner_create knows tuner `name`. */
bool rlt_tuner_is_known(const char *name);

/* The flags (rlt_tuner_flag) of tuner `name`; 0 when there is no such tuner. */
unsigned rlt_tuner_flags(const char *name);

/* The names of the tuners with every flag in `flags`, comma-separated
 * ("xgb, xgb-rank, ppo"), into buf (cut to cap). For messages. */
void rlt_tuner_names_with(unsigned flags, char *buf, size_t cap);

/* Creates tuner `name` over `space` (borrowed; must outlive the tuner).
 * Unknown names are INVALID_ARGUMENT listing the known ones. */
rlt_status rlt_tuner_create(const char *name, const rlt_space *space, const rlt_tuner_opts *opts, rlt_tuner **out,
                            rlt_diag *diag);
void rlt_tuner_destroy(rlt_tuner *t); /* NULL ok */

/* Proposes up to `max` new valid configurations; returns how many (0 when
 * the tuner has nothing left to propose). */
int rlt_tuner_next_batch(rlt_tuner *t, int max, rlt_config *out);

/* Reports measured scores (higher is better; 0 for failures). Configs may
 * include ones the tuner did not propose (records read back on resume):
 * they count as visited. */
rlt_status rlt_tuner_update(rlt_tuner *t, int n, const rlt_config *configs, const double *scores, rlt_diag *diag);

const char *rlt_tuner_name(const rlt_tuner *t);

/* ---- saved agents (tuner_agent.c; docs/tuners.md, "Saved agents") --------
 *
 * A learning tuner (ga-dqn, dqn, bandit, ppo) saves what it learned
 * (networks, optimiser state, exploration counters) to a file, and a new
 * tuner of the same name loads it before its first proposal, on the same
 * workload or on another of the same op kind (ktune's transfer between
 * layers). What each tuner keeps and what restarts is in docs/tuners.md. */

/* True when the tuner has an agent to save and load. */
bool rlt_tuner_has_agent(const rlt_tuner *t);

/* Writes the agent to `path` (atomically). Errors: INVALID_ARGUMENT for a
 * tuner without an agent; IO_ERROR; OUT_OF_MEMORY. */
rlt_status rlt_tuner_save(const rlt_tuner *t, const char *path, rlt_diag *diag);

/* Replaces t's agent by the one in `path`; t must not have proposed yet.
 * Errors: INVALID_ARGUMENT for a tuner without an agent, a file saved by
 * another tuner, knobs or network shapes that do not fit this space or
 * these hyper-parameters (the message says which); IO_ERROR and
 * PARSE_ERROR for the file (nn/agent_file.h); OUT_OF_MEMORY. t is unchanged
 * on error. */
rlt_status rlt_tuner_load(rlt_tuner *t, const char *path, rlt_diag *diag);

/* ---- for tuner implementations (the files of src/search) -------------- */

/* A set of configuration indices: what has been proposed or measured. */
typedef struct rlt_visited {
    uint64_t *slots; /* open addressing; UINT64_MAX = empty */
    size_t cap, n;
} rlt_visited;

bool rlt_visited_has(const rlt_visited *v, uint64_t index);
/* Adds index; false if it was there already (or out of memory). */
bool rlt_visited_add(rlt_visited *v, uint64_t index);
void rlt_visited_free(rlt_visited *v);

/* Scores by configuration index (open addressing): what dqn knows of the
 * configurations it walked through, ppo's cache of model scores.
 * Zero-initialise; free with rlt_score_map_free. */
typedef struct rlt_score_map {
    uint64_t *keys; /* UINT64_MAX = empty */
    double *values;
    size_t cap, n;
} rlt_score_map;

/* index's score into *out; false when the map has none. */
bool rlt_score_map_get(const rlt_score_map *m, uint64_t index, double *out);
/* Sets index's score (index < UINT64_MAX); false when out of memory, and
 * then the map is unchanged. */
bool rlt_score_map_put(rlt_score_map *m, uint64_t index, double value);
/* Forgets every score, keeping the memory. */
void rlt_score_map_clear(rlt_score_map *m);
void rlt_score_map_free(rlt_score_map *m);

typedef struct rlt_agent_file rlt_agent_file; /* nn/agent_file.h */

/* A new, empty agent file for tuner `tuner` that learns on `space`: its
 * knobs section lists the space's knobs, their names and numbers of
 * choices, in order (NULL: none). Owned by the caller
 * (rlt_agent_file_destroy). Errors: OUT_OF_MEMORY. */
rlt_status rlt_tuner_agent_create(const char *tuner, const rlt_space *space, rlt_agent_file **out, rlt_diag *diag);

/* Checks that `space` has the knobs the agent in f learned on: the same
 * number, in the same order, with the same names, and with `is_size_needed`
 * the same number of choices each (agents whose inputs and outputs do not
 * depend on the knobs' sizes, such as the -1/0/+1 walkers, move between
 * workloads of one op kind whose split factors differ). Errors:
 * INVALID_ARGUMENT naming the first difference (or a knobs section that is
 * not "NAME SIZE" lines). */
rlt_status rlt_tuner_agent_check_knobs(const rlt_agent_file *f, const rlt_space *space, bool is_size_needed,
                                       rlt_diag *diag);

typedef struct rlt_tuner_ops {
    const char *name;
    unsigned flags; /* rlt_tuner_flag: RLT_TUNER_HAS_AGENT exactly when save and load are set */
    rlt_status (*init)(rlt_tuner *t, rlt_diag *diag);
    int (*next_batch)(rlt_tuner *t, int max, rlt_config *out);
    rlt_status (*update)(rlt_tuner *t, int n, const rlt_config *configs, const double *scores, rlt_diag *diag);
    void (*fini)(rlt_tuner *t);
    /* Learning tuners only (NULL for the others): add what the agent
     * learned to f (save), or replace it by f's (load, on a tuner that has
     * proposed nothing yet; f's tuner is this one, its knobs are not yet
     * checked against the space). */
    rlt_status (*save)(const rlt_tuner *t, rlt_agent_file *f, rlt_diag *diag);
    rlt_status (*load)(rlt_tuner *t, const rlt_agent_file *f, rlt_diag *diag);
} rlt_tuner_ops;

/* The model-based tuners (xgb_tuner.c). */
extern const rlt_tuner_ops rlt_tuner_xgb_ops;
extern const rlt_tuner_ops rlt_tuner_xgb_rank_ops;
/* ktune's multi-step DQN (dqn.c). */
extern const rlt_tuner_ops rlt_tuner_dqn_ops;
/* ktune's one-step contextual bandit (bandit.c). */
extern const rlt_tuner_ops rlt_tuner_bandit_ops;
/* GA-DQN: ga with a DQN for the crossover point and one for the mutation (ga_dqn.c). */
extern const rlt_tuner_ops rlt_tuner_ga_dqn_ops;
/* Chameleon: PPO walkers over the cost model, adaptive sampling (ppo.c). */
extern const rlt_tuner_ops rlt_tuner_ppo_ops;

struct rlt_tuner {
    const rlt_tuner_ops *ops;
    const rlt_space *space;
    rlt_tuner_opts opts;
    rlt_rng rng;
    rlt_visited visited; /* proposed or reported */
    void *state;         /* the tuner's own, freed by fini */
};

/* Draws a random valid configuration not yet visited (up to `tries`
 * attempts); false when none was found. Marks it visited. */
bool rlt_tuner_draw_new(rlt_tuner *t, int tries, rlt_config *out);

/* Walks indices from `*cursor` upward for the next unvisited valid
 * configuration and marks it (and the invalid ones passed) visited; false
 * when the space is exhausted. Grid order, and every tuner's fallback once
 * random draws stop finding new configurations in a small space. */
bool rlt_tuner_scan_new(rlt_tuner *t, uint64_t *cursor, rlt_config *out);

/* ---- the genetic algorithm of ga and ga-dqn (tuner.c) ------------------
 *
 * AutoTVM's GATuner: generations of `pop` configurations; each is proposed
 * whole, and once all of it is measured the next is bred from it plus the
 * `elite` best kept so far, parents drawn in proportion to their scores.
 * ga makes a child by two-point crossover and per-gene mutation; ga-dqn
 * (ga_dqn.c) lets two DQNs choose the crossover point and the mutation.
 * Every array is owned (rlt_ga_free). */
typedef struct rlt_ga {
    int pop, elite;
    rlt_config *gen;    /* the current generation (pop) */
    double *gen_score;  /* its scores; -1 until measured */
    int n_gen, n_proposed;
    rlt_config *elites; /* the best configurations seen (elite) */
    double *elite_score;
    int n_elites;
    /* the parents of the generation being bred: the last generation, then
     * the elites before this breeding (pop + elite at most) */
    rlt_config *pool;
    double *pool_score;  /* failures count 0 */
    double *pool_weight; /* score / best score + 1e-8 (AutoTVM's) */
    double pool_weight_total;
    bool *pool_is_elite; /* scratch of the elite selection */
    int n_pool;
    uint64_t scan_cursor; /* scan position once random draws run dry */
} rlt_ga;

/* Makes the child for slot `slot` (0 .. pop-1) of the generation being
 * bred, from parents of g->pool (rlt_ga_pick_parent): true with a new,
 * valid configuration in *out, claimed with rlt_ga_claim; false when it
 * found none, and the slot gets a random configuration instead. `ctx` is
 * the caller's, passed through. */
typedef bool (*rlt_ga_child_fn)(rlt_tuner *t, rlt_ga *g, void *ctx, int slot, rlt_config *out);

/* Sizes the population from t->opts (population: 0 = min(64, |space|), at
 * most 1000; elite: 0 = 3) and draws the first generation at random from
 * t->rng. Errors: OUT_OF_MEMORY (rlt_ga_free still frees what was made). */
rlt_status rlt_ga_init(rlt_tuner *t, rlt_ga *g, rlt_diag *diag);
void rlt_ga_free(rlt_ga *g);

/* A tuner's next_batch: the generation's next configurations; when all of
 * it has been proposed and measured, breeds the next one with make_child
 * and goes on. Returns how many were written to out (at most max). */
int rlt_ga_next(rlt_tuner *t, rlt_ga *g, rlt_ga_child_fn make_child, void *ctx, int max, rlt_config *out);

/* A tuner's update: the scores of the generation's members among configs;
 * the others (not proposed by the GA) are ignored. */
void rlt_ga_update(rlt_ga *g, const rlt_space *s, int n, const rlt_config *configs, const double *scores);

/* The slot of c in the current generation, or -1. */
int rlt_ga_find(const rlt_ga *g, const rlt_space *s, const rlt_config *c);

/* A parent: an index into g->pool drawn in proportion to g->pool_weight. */
int rlt_ga_pick_parent(rlt_tuner *t, const rlt_ga *g);

/* True when child is valid and not visited; marks it visited either way,
 * so that an invalid child is not tried again. */
bool rlt_ga_claim(rlt_tuner *t, const rlt_config *child);

#endif /* RLT_TUNER_H */
