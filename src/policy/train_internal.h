/*
 * train_internal.h - what train.c shares with the two algorithms
 * (train_dqn.c, train_ppo.c): the resolved options, the env slots, the
 * run, the algorithm interface, and the compact encodings of the
 * checkpoint's binary sections. Not an API: include train.h instead.
 */
#ifndef RLT_POLICY_TRAIN_INTERNAL_H
#define RLT_POLICY_TRAIN_INTERNAL_H

#include "policy/train.h"

/* The options in force: defaults resolved, or the checkpoint's. */
typedef struct train_cfg {
    rlt_policy_algo algo;
    uint64_t seed;
    int n_hidden;
    int hidden[RLT_POLICY_MAX_HIDDEN];
    int n_envs, episode_steps;
    double lr, gamma;
    int dqn_batch, dqn_buffer, dqn_learn_start, dqn_target_every;
    double dqn_updates_per_step, dqn_eps_end, dqn_eps_fraction;
    int ppo_rollout_steps, ppo_epochs, ppo_minibatch;
    double ppo_lambda, ppo_clip, ppo_entropy_coef;
    int ppo_critic_warmup;  /* env steps at the start in which only the critic learns */
    char init[256];         /* the policy the networks started from (--init), "" for none; not compared */
} train_cfg;

/* One env slot: an episode in progress on one shape. */
typedef struct train_slot {
    rlt_env *env;          /* owned; a clone of the shape's family root; NULL before the first episode */
    int shape;             /* index into train_run.specs of env's family; -1 while env is NULL */
    bool is_running;       /* an episode is in progress */
    int n_actions;         /* actions taken in it */
    uint8_t actions[RLT_TRAIN_MAX_EPISODE_STEPS]; /* what a resume replays to rebuild the state */
    double ret;            /* rewards so far */
    double start_frac;     /* the start state's GFLOP/s over the peak */
    float obs[RLT_ENV_OBS_LEN]; /* the current state's observation */
} train_slot;

/* A finished episode: the curve's points. */
typedef struct train_episode {
    int64_t end_step;  /* env steps done when it ended */
    float ret;         /* its return: the end state's GFLOP/s over peak less the start's */
    float start_frac;  /* the start state's GFLOP/s over peak */
} train_episode;

typedef struct train_run train_run;

/* An algorithm. Every hook gets the run; the algorithm keeps its state in
 * run->algo_state. */
typedef struct train_algo {
    /* Creates the state (networks beside the policy, buffers). */
    rlt_status (*init)(train_run *r, rlt_diag *diag);
    /* Chooses actions[i] for slots 0 .. n-1, each running with a current
     * observation (slot.obs). */
    rlt_status (*act)(train_run *r, int n, int *actions, rlt_diag *diag);
    /* Slot i went from obs_before by `action` to obs_after with `reward`;
     * is_terminal: the episode ended by stop (nothing follows); is_truncated:
     * it ended by the step limit (what follows is worth V(obs_after)). */
    void (*record)(train_run *r, int i, const float *obs_before, int action, float reward, bool is_terminal,
                   bool is_truncated, const float *obs_after);
    /* Learns after a batched step of n_new env steps. */
    rlt_status (*learn)(train_run *r, int n_new, rlt_diag *diag);
    /* At the end of a run that reached its steps (not an interrupted one). */
    rlt_status (*finish)(train_run *r, rlt_diag *diag);
    /* Adds its checkpoint sections; what it stores beyond the networks
     * must stay within budget_bytes. */
    rlt_status (*save)(const train_run *r, rlt_agent_file *f, size_t budget_bytes, rlt_diag *diag);
    /* Reads them back into a state made by init. */
    rlt_status (*load)(train_run *r, const rlt_agent_file *f, rlt_diag *diag);
    void (*free)(train_run *r);
} train_algo;

extern const train_algo train_algo_dqn;
extern const train_algo train_algo_ppo;

struct train_run {
    const rlt_train_opts *opts;
    train_cfg cfg;
    const train_algo *algo;
    void *algo_state;
    rlt_policy *policy;        /* owned until handed to the caller */
    rlt_rng rng;               /* shapes drawn, exploration, sampling, minibatches */
    int n_specs;               /* the dataset's training shapes */
    const char **specs;        /* [n_specs], borrowed from opts->shapes */
    rlt_env **families;        /* [n_specs] the root env of each shape's family, made at its first episode */
    train_slot *slots;         /* [cfg.n_envs] */
    train_episode *episodes;   /* finished episodes, in order */
    int64_t n_episodes, cap_episodes;
    int64_t n_steps;           /* env steps done, those before a resume included */
    int64_t n_steps_resumed;
    int64_t n_updates;         /* gradient steps */
    int64_t n_evaluations_base, n_cache_hits_base; /* the checkpoint's counts */
    double wall_base_s;        /* the checkpoint's wall time */
    uint64_t t0_ns;            /* this call's start */
    int n_checkpoints;
};

/* The mask block of an observation as booleans; the number of legal actions. */
int train_obs_mask(const float *obs, bool mask[RLT_ENV_N_ACTIONS]);

/* ---- binary sections: little-endian, no padding ------------------------- */

/* Appends v in n_bytes (1..8) little-endian; floats by their bits. */
void train_put_u(rlt_str *s, uint64_t v, int n_bytes);
void train_put_f32(rlt_str *s, float v);
void train_put_f64(rlt_str *s, double v);
/* An observation, sparse: u16 count of non-zero floats (by bits: -0.0 is
 * kept), then per float u16 index and its u32 bits. Exact. */
void train_put_obs(rlt_str *s, const float *obs);
/* Its size in bytes. */
size_t train_obs_bytes(const float *obs);

/* A cursor over a section being read; the first read past the end sets
 * has_failed and reads zeros. */
typedef struct train_reader {
    const unsigned char *p;
    size_t len, at;
    bool has_failed;
} train_reader;

uint64_t train_get_u(train_reader *r, int n_bytes);
float train_get_f32(train_reader *r);
double train_get_f64(train_reader *r);
/* False (has_failed set) for a count above RLT_ENV_OBS_LEN, an index out of
 * range or in decreasing order, or a float that is not finite. */
bool train_get_obs(train_reader *r, float *obs);

/* PARSE_ERROR naming the checkpoint and the section. */
rlt_status train_section_error(const train_run *r, const char *section, const char *what, rlt_diag *diag);

/* The checkpoint being read or written, for messages. */
const char *train_checkpoint_name(const train_run *r);

#endif /* RLT_POLICY_TRAIN_INTERNAL_H */
