/*
 * test_mpi_executor.c - `--executor mpi` under a real mpirun (RLTUNE_MPIRUN,
 * set by CMake; built only where CMake found MPI): three ranks on this
 * machine record exactly what a local run records, a lost rank loses no
 * finished batch and the same command resumes, a rank that stops answering
 * ends the job instead of hanging it, a rank of another target
 * is refused before anything is stored, ranks waiting leave the cores to
 * the kernel timed, `dataset` and `tune --model` run over the ranks, and
 * a job spans two hosts simulated as network namespaces (root only).
 */
#include "../cli/cli_runner.h"
#include "../common/onnx_build.h"
#include "rltune.h"

#include <dirent.h>
#include <stdarg.h>
#include <sys/stat.h>

#define SPEC "matmul:M=48,N=40,K=32"

static char tmp_dir[] = "/tmp/rltune_test_mpi_XXXXXX";

static void setup(void)
{
    cr_assert_not_null(mkdtemp(tmp_dir));
    /* CI runs as root, which mpirun refuses without these */
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
}

static void teardown(void)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp_dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(mpi_executor, .init = setup, .fini = teardown, .timeout = 600);

static void path_in(char *buf, size_t cap, const char *name) { snprintf(buf, cap, "%s/%s", tmp_dir, name); }

/* `mpirun --oversubscribe -np N rltune ARGS` (N is a string). */
#define MPIRUN(n, ...)                                                                                             \
    run_program_argv(RLTUNE_MPIRUN, NULL,                                                                          \
                     (const char *const[]){"--oversubscribe", "-np", n, RLTUNE_BINARY, __VA_ARGS__, NULL})

/* The configurations of the spec's records in a database, tuning's apart
 * from the final pick's. */
typedef struct recorded {
    int n, n_final;
    char configs[512][1024];
} recorded;

static bool collect(const rlt_record *r, void *ctx)
{
    recorded *c = ctx;
    if (r->is_final) {
        c->n_final++;
        return true;
    }
    cr_assert_lt(c->n, 512);
    snprintf(c->configs[c->n++], sizeof c->configs[0], "%s", r->config);
    return true;
}

static int compare_texts(const void *a, const void *b) { return strcmp(a, b); }

/* fn on every record of SPEC in a database, oldest first. */
static void for_each_record(const char *db_path, rlt_db_record_fn fn, void *ctx)
{
    rlt_db *db = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_db_open(db_path, &(rlt_db_opts){.is_read_only = true}, &db, &d), RLT_STATUS_OK, "%s",
                 d.message);
    cr_assert_eq(rlt_db_history(db, SPEC, NULL, fn, ctx, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_db_close(db);
}

static recorded *read_records(const char *db_path)
{
    recorded *c = calloc(1, sizeof *c);
    cr_assert_not_null(c);
    for_each_record(db_path, collect, c);
    qsort(c->configs, (size_t)c->n, sizeof c->configs[0], compare_texts);
    return c;
}

Test(mpi_executor, three_ranks_record_what_a_local_run_records)
{
    char local_db[512], mpi_db[512];
    path_in(local_db, sizeof local_db, "local.db");
    path_in(mpi_db, sizeof mpi_db, "mpi.db");
    cli_run r = CLI("tune", "--op", SPEC, "--tuner", "random", "--trials", "24", "--batch", "8", "--db", local_db,
                    "--json");
    assert_ok(&r);
    cli_run_free(&r);
    r = MPIRUN("3", "tune", "--op", SPEC, "--tuner", "random", "--trials", "24", "--batch", "8", "--db", mpi_db,
               "--executor", "mpi", "--json");
    assert_ok(&r);
    assert_has(r.err, "3 ranks on 1 host", "the job's layout on stderr");
    assert_has(r.out, "\"measured\":24", "every trial measured");
    cli_run_free(&r);
    recorded *local = read_records(local_db), *mpi = read_records(mpi_db);
    cr_assert_eq(mpi->n, 24, "24 tuning records, got %d", mpi->n);
    for (int i = 1; i < mpi->n; i++)
        cr_assert_str_neq(mpi->configs[i], mpi->configs[i - 1], "%s measured twice", mpi->configs[i]);
    cr_assert_eq(mpi->n, local->n);
    cr_assert_eq(mpi->n_final, local->n_final, "the final pick's records: %d over MPI, %d here", mpi->n_final,
                 local->n_final);
    for (int i = 0; i < mpi->n; i++)
        cr_assert_str_eq(mpi->configs[i], local->configs[i], "the random tuner's seed 0 proposes the same");
    free(local);
    free(mpi);
}

/* The pid of the rank `rank` of mpirun `mpirun_pid`'s job: its child whose
 * environment says OMPI_COMM_WORLD_RANK=rank; 0 while there is none. */
static pid_t rank_pid(pid_t mpirun_pid, int rank)
{
    char want[64];
    snprintf(want, sizeof want, "OMPI_COMM_WORLD_RANK=%d", rank);
    DIR *proc = opendir("/proc");
    cr_assert_not_null(proc);
    pid_t found = 0;
    struct dirent *e;
    while (!found && (e = readdir(proc))) {
        char path[300], buf[8192];
        pid_t pid = (pid_t)atoi(e->d_name);
        if (pid <= 0) continue;
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        int ppid = 0;
        bool is_read = fscanf(f, "%*d %*s %*c %d", &ppid) == 1;
        fclose(f);
        if (!is_read || ppid != mpirun_pid) continue;
        snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
        if (!(f = fopen(path, "r"))) continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        for (size_t at = 0; at < n; at += strlen(buf + at) + 1) {
            buf[n] = '\0';
            if (strcmp(buf + at, want) == 0) found = pid;
        }
    }
    closedir(proc);
    return found;
}

static int64_t count_records(const char *db_path)
{
    rlt_db *db = NULL;
    rlt_diag d = {0};
    if (access(db_path, F_OK) != 0 ||
        rlt_db_open(db_path, &(rlt_db_opts){.is_read_only = true}, &db, &d) != RLT_STATUS_OK)
        return 0;
    int64_t n = 0;
    if (rlt_db_count(db, SPEC, &n, &d) != RLT_STATUS_OK) n = 0;
    rlt_db_close(db);
    return n;
}

/* Starts a long run over 3 ranks into tmp_dir/NAME.db (stderr in
 * NAME.err) and returns once two batches are stored: mpirun's pid, and in
 * *out_victim the pid of rank `victim`. */
static pid_t start_long_run(const char *name, int victim, pid_t *out_victim)
{
    char file[64], db_path[512], out_path[512], err_path[512];
    snprintf(file, sizeof file, "%s.db", name);
    path_in(db_path, sizeof db_path, file);
    snprintf(file, sizeof file, "%s.out", name);
    path_in(out_path, sizeof out_path, file);
    snprintf(file, sizeof file, "%s.err", name);
    path_in(err_path, sizeof err_path, file);
    const char *args[] = {"--oversubscribe", "-np", "3", RLTUNE_BINARY, "tune", "--op", SPEC, "--tuner", "random",
                          "--trials", "400", "--batch", "8", "--db", db_path, "--executor", "mpi", "--json", NULL};
    pid_t pid = program_spawn(RLTUNE_MPIRUN, args, out_path, err_path);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    *out_victim = 0;
    for (;;) {
        if (!*out_victim) *out_victim = rank_pid(pid, victim);
        if (*out_victim && count_records(db_path) >= 16) return pid;
        clock_gettime(CLOCK_MONOTONIC, &now);
        cr_assert_lt((double)(now.tv_sec - t0.tv_sec), 120, "no two batches stored in 120 s");
        nanosleep(&(struct timespec){.tv_nsec = 50 * 1000 * 1000}, NULL);
    }
}

/* The CPU time a process has spent itself (its children not counted). */
static double own_cpu_s(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    unsigned long utime = 0, stime = 0;
    /* the name (field 2) may hold spaces: read after its closing ')' */
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *after = strrchr(buf, ')');
    cr_assert_not_null(after);
    cr_assert_eq(sscanf(after + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime), 2);
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

/* OpenMPI's blocking calls spin while they wait: ranks waiting that way
 * held a core each whenever another rank of their host timed a kernel
 * (at two threads, kernels timed at 2-11% of their speed). A rank's own
 * CPU time (its compilers and timed kernels are child processes) counts
 * only lowering, messages and its waits: about 0.1 s in 3 s of a run here,
 * against 0.75 s when they waited in MPI_Probe. */
Test(mpi_executor, waiting_ranks_leave_the_cores_to_the_kernel_timed)
{
    pid_t rank1;
    pid_t pid = start_long_run("waiting", 1, &rank1);
    pid_t rank2 = rank_pid(pid, 2);
    cr_assert_gt(rank2, 0);
    double before = own_cpu_s(rank1) + own_cpu_s(rank2);
    nanosleep(&(struct timespec){.tv_sec = 3}, NULL);
    double spent = own_cpu_s(rank1) + own_cpu_s(rank2) - before;
    kill(pid, SIGINT); /* mpirun ends the job */
    cli_wait(pid, 60);
    cr_log_info("ranks 1 and 2 spent %.2f s of CPU themselves in 3 s", spent);
    cr_assert_lt(spent, 0.35, "ranks 1 and 2 spent %.2f s of CPU themselves in 3 s", spent);
}

/* The records a run cut short left: whole batches of 8, two at least. */
static int64_t expect_whole_batches(const char *db_path)
{
    int64_t kept = count_records(db_path);
    cr_assert_geq(kept, 16);
    cr_assert_lt(kept, 400, "the run was cut short");
    cr_assert_eq(kept % 8, 0, "whole batches only: %lld records", (long long)kept);
    return kept;
}

Test(mpi_executor, a_lost_rank_loses_no_finished_batch_and_the_command_resumes)
{
    char db_path[512];
    path_in(db_path, sizeof db_path, "lost.db");
    /* once two batches are stored, rank 1 dies as a lost machine would */
    pid_t victim;
    pid_t pid = start_long_run("lost", 1, &victim);
    cr_assert_eq(kill(victim, SIGKILL), 0);
    int status = cli_wait(pid, 120);
    cr_assert(!WIFEXITED(status) || WEXITSTATUS(status) != 0, "mpirun ends the job when a rank is lost");
    int64_t kept = expect_whole_batches(db_path);
    /* the same command goes on from there */
    char trials[32];
    snprintf(trials, sizeof trials, "%lld", (long long)kept + 16);
    cli_run r = MPIRUN("3", "tune", "--op", SPEC, "--tuner", "random", "--trials", trials, "--batch", "8", "--db",
                       db_path, "--executor", "mpi", "--json");
    assert_ok(&r);
    char want[64];
    snprintf(want, sizeof want, "\"from_records\":%lld", (long long)kept);
    assert_has(r.out, want, "the stored batches read back");
    assert_has(r.out, "\"measured\":16", "the rest measured");
    cli_run_free(&r);
}

Test(mpi_executor, a_rank_that_stops_answering_ends_the_job_instead_of_hanging_it)
{
    char db_path[512], err_path[512];
    path_in(db_path, sizeof db_path, "stopped.db");
    path_in(err_path, sizeof err_path, "stopped.err");
    /* rank 0 waits this long for a reply (instead of the share's worst case) */
    cr_assert_eq(setenv("RLTUNE_MPI_WAIT_S", "6", 1), 0);
    pid_t victim;
    pid_t pid = start_long_run("stopped", 2, &victim);
    unsetenv("RLTUNE_MPI_WAIT_S");
    /* a machine that stops answering: the process is there, but never replies */
    cr_assert_eq(kill(victim, SIGSTOP), 0);
    int status = cli_wait(pid, 60);
    cr_assert(!WIFEXITED(status) || WEXITSTATUS(status) != 0, "the job ends with an error");
    FILE *f = fopen(err_path, "r");
    cr_assert_not_null(f);
    char err[8192] = {0};
    size_t got = fread(err, 1, sizeof err - 1, f);
    fclose(f);
    err[got] = '\0';
    assert_has(err, "rank 2", "the rank named");
    assert_has(err, "has not answered", "why the job ended");
    expect_whole_batches(db_path);
    kill(victim, SIGKILL); /* should mpirun have left it */
}

Test(mpi_executor, a_rank_of_another_target_is_refused_and_nothing_is_stored)
{
    char db_path[512];
    path_in(db_path, sizeof db_path, "mixed.db");
    /* rank 1 would compile with clang where rank 0 files under gcc */
    cli_run r = run_program_argv(
        RLTUNE_MPIRUN, NULL,
        (const char *const[]){"-np", "1", RLTUNE_BINARY, "tune", "--op", SPEC, "--trials", "8", "--batch", "8",
                              "--db", db_path, "--executor", "mpi", ":", "-np", "1", "/usr/bin/env", "RLTUNE_CC=clang",
                              RLTUNE_BINARY, "tune", "--op", SPEC, "--trials", "8", "--batch", "8", "--db", db_path,
                              "--executor", "mpi", NULL});
    cr_assert_neq(r.exit_code, 0, "stdout: %s\nstderr: %s", r.out, r.err);
    assert_has(r.err, "rank 1", "the rank named");
    assert_has(r.err, "measures for target", "why it is refused");
    cli_run_free(&r);
    cr_assert_eq(count_records(db_path), 0, "nothing of either target stored");
}

Test(mpi_executor, a_dataset_is_measured_over_the_ranks)
{
    char db_path[512];
    path_in(db_path, sizeof db_path, "dataset.db");
    cli_run r = MPIRUN("2", "dataset", "--op", SPEC, "--samples", "12", "--batch", "4", "--out", db_path, "--executor",
                       "mpi", "--json");
    assert_ok(&r);
    assert_has(r.out, "\"measured\":12", "every sample measured");
    cli_run_free(&r);
    cr_assert_eq(count_records(db_path), 12);
}

Test(mpi_executor, a_model_is_tuned_over_the_ranks_and_runs_on_what_they_measured)
{
    char model[512], db_path[512];
    path_in(model, sizeof model, "net.onnx");
    path_in(db_path, sizeof db_path, "model.db");
    uint64_t rng = 5;
    cr_assert(ob_write_small_cnn(model, &rng), "cannot write %s", model);
    cli_run r = MPIRUN("2", "tune", "--model", model, "--trials", "24", "--batch", "4", "--db", db_path,
                       "--executor", "mpi", "--json");
    assert_ok(&r);
    assert_has(r.err, "2 ranks on 1 host", "the job's layout");
    assert_has(r.out, "\"tasks\"", "the model's report");
    cli_run_free(&r);
    r = CLI("run", "--model", model, "--db", db_path, "--repeat", "3", "--json");
    assert_ok(&r);
    assert_has(r.out, "\"correct\":true", "the network's output checked");
    cr_assert_null(strstr(r.out, "\"tasks_tuned\":0,"), "kernels chosen from the records: %s", r.out);
    cli_run_free(&r);
}

/* ---- two hosts: network namespaces joined by a veth pair ------------------ */

/* (After the suite's setup, before its teardown.) Two namespaces named
 * after this process, each a host with an address of
 * its own and its own name (hosts files under /etc/netns/NAME, which
 * `ip netns exec` mounts over /etc/hosts); mpirun starts in the first and
 * reaches the second through a launch agent that stands in for ssh. */
static char host_a[32], host_b[32], subnet[32];

static void sh(const char *fmt, ...) RLT_API_PRINTF(1, 2);
static void sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
}

static void hosts_remove(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null; rm -rf /etc/netns/%s /etc/netns/%s", host_a,
             host_b, host_a, host_b);
    if (system(cmd) != 0) cr_log_warn("cleaning up: %s", cmd);
}

static void hosts_make(void)
{
    if (geteuid() != 0) return; /* the test skips itself */
    int id = (int)(getpid() % 100000);
    snprintf(host_a, sizeof host_a, "rlt%da", id);
    snprintf(host_b, sizeof host_b, "rlt%db", id);
    snprintf(subnet, sizeof subnet, "10.%d.%d", 200 + id % 50, id % 250);
    sh("ip netns add %s && ip netns add %s", host_a, host_b);
    sh("ip link add %s-v type veth peer name %s-v", host_a, host_b);
    sh("ip link set %s-v netns %s && ip link set %s-v netns %s", host_a, host_a, host_b, host_b);
    sh("ip -n %s addr add %s.1/24 dev %s-v && ip -n %s addr add %s.2/24 dev %s-v", host_a, subnet, host_a, host_b,
       subnet, host_b);
    const char *hosts[] = {host_a, host_b};
    for (int i = 0; i < 2; i++) {
        sh("ip -n %s link set %s-v up && ip -n %s link set lo up", hosts[i], hosts[i], hosts[i]);
        sh("mkdir -p /etc/netns/%s && printf '127.0.0.1 localhost\\n%s.1 %s\\n%s.2 %s\\n' > /etc/netns/%s/hosts",
           hosts[i], subnet, host_a, subnet, host_b, hosts[i]);
    }
    /* mpirun's agent in place of ssh: HOST COMMAND... */
    char agent[512];
    path_in(agent, sizeof agent, "netns-rsh");
    FILE *f = fopen(agent, "w");
    cr_assert_not_null(f);
    fprintf(f, "#!/bin/sh\nhost=$1; shift\n"
               "exec ip netns exec \"$host\" unshare --uts sh -c 'hostname \"$0\" && exec sh -c \"$1\"' "
               "\"$host\" \"$*\"\n");
    fclose(f);
    cr_assert_eq(chmod(agent, 0755), 0);
}

Test(mpi_executor, ranks_on_two_hosts_share_the_batches, .init = hosts_make, .fini = hosts_remove)
{
    if (geteuid() != 0) cr_skip_test("network namespaces need root");
    char db_path[512], agent[512], hostlist[96], script[4096];
    path_in(db_path, sizeof db_path, "hosts.db");
    path_in(agent, sizeof agent, "netns-rsh");
    snprintf(hostlist, sizeof hostlist, "%s:2,%s:1", host_a, host_b);
    /* mpirun itself on host a, under its name */
    snprintf(script, sizeof script,
             "hostname %s && exec %s --mca plm_rsh_agent %s --host %s -np 3 --mca oob_tcp_if_include %s.0/24 "
             "--mca btl tcp,self --mca btl_tcp_if_include %s.0/24 %s tune --op " SPEC " --tuner random --trials 16 "
             "--batch 8 --db %s --executor mpi --json",
             host_a, RLTUNE_MPIRUN, agent, hostlist, subnet, subnet, RLTUNE_BINARY, db_path);
    const char *args[] = {"netns", "exec", host_a, "unshare", "--uts", "sh", "-c", script, NULL};
    cli_run r = run_program_argv("/usr/bin/ip", NULL, args);
    assert_ok(&r);
    assert_has(r.err, "3 ranks on 2 hosts", "both hosts in the job");
    assert_has(r.out, "\"measured\":16", "every trial measured");
    cli_run_free(&r);
    cr_assert_eq(count_records(db_path), 16 + 4, "16 trials and the final pick's 4, stored once");
    /* run again: everything is read back */
    r = run_program_argv("/usr/bin/ip", NULL, args);
    assert_ok(&r);
    assert_has(r.out, "\"from_records\":16", "read back");
    assert_has(r.out, "\"measured\":0", "nothing measured again");
    cli_run_free(&r);
}
