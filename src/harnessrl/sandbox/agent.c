/* The in-sandbox agent, native build: the same program as `_agent.py`, in C.
 *
 * Why a second implementation: a sandbox's creation is mostly waiting for its agent to start, and
 * the system python takes ~12 ms to start on two cores (`python3 -I -S -c pass`) where this takes
 * well under one. `folders.native_agent` compiles this file once per machine with the system C
 * compiler (cached in the sandbox base folder); without a compiler the sandbox runs `_agent.py`.
 * Both speak the protocol below and behave the same; the sandbox tests run against both.
 *
 *     agent LISTEN_PORT SOCK_PATH REAP_ALL FD_SOCKET
 *
 * - pid 1 of the sandbox's pid namespace (bwrap --as-pid-1); reaps every orphan; non-dumpable first
 *   (PR_SET_DUMPABLE 0), so commands (same uid) cannot open its pipes through /proc/1/fd.
 * - Control: frames on stdin/stdout, a 4-byte big-endian length + a payload. Host to agent (trusted):
 *   NUL-separated fields (`protocol.encode_request`): "exec", id, cwd, timeout_s ("" = none),
 *   grace_s, nfds, argc, argv..., envc, "K=V"..., nrlimits, (resource number, value)... . The request
 *   comes with `nfds` descriptors on FD_SOCKET (SCM_RIGHTS): stdout, stderr, then extras as fd 3...
 *   Agent to host: one flat JSON object: first {"ready", "pid", "dumpable"}, then per request
 *   {"id", "rc", "timed_out", "error"} once the command has exited (rc < 0: the killing signal).
 * - A command runs in its own session; on timeout its group gets SIGTERM, SIGKILL after grace_s.
 *   After it exits, with REAP_ALL 1, every other process of the namespace is SIGKILLed and reaped
 *   before the reply (`kill_others`).
 * - Bridge: with LISTEN_PORT > 0, connections to 127.0.0.1:LISTEN_PORT are piped to the unix socket
 *   SOCK_PATH (served on the host by `forward.UnixToTcpForwarder`).
 * - stdin EOF (the host went away) kills the running command and ends the agent.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BUF_LIMIT (1 << 18)
#define MAX_FRAME (64u << 20)
#define MAX_FDS 64
#define ERR_MAX 4000
#define REAP_WAIT_S 2.0

typedef struct {
    char *data;
    size_t len, cap;
} Buf;

static void buf_add(Buf *b, const char *data, size_t n) {
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        char *p = realloc(b->data, cap);
        if (!p) _exit(3);
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
}

static void buf_drop(Buf *b, size_t n) {
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
}

/* ---- replies ------------------------------------------------------------------------------ */

static void write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            _exit(0); /* the host is gone */
        }
        p += w;
        n -= (size_t)w;
    }
}

/* A JSON string of printable ASCII; anything else (and quotes, backslashes) becomes '?'. */
static void json_str(Buf *b, const char *s) {
    buf_add(b, "\"", 1);
    for (size_t i = 0; s[i] && i < ERR_MAX; i++) {
        char c = s[i];
        if (c < ' ' || c >= 0x7f || c == '"' || c == '\\') c = '?';
        buf_add(b, &c, 1);
    }
    buf_add(b, "\"", 1);
}

static void send_frame(Buf *b) {
    uint32_t n = htonl((uint32_t)b->len);
    Buf out = {0};
    buf_add(&out, (const char *)&n, 4);
    buf_add(&out, b->data, b->len);
    write_all(1, out.data, out.len);
    free(out.data);
    free(b->data);
}

static void reply_hello(int dumpable) {
    char text[128];
    snprintf(text, sizeof text, "{\"ready\":true,\"pid\":%d,\"dumpable\":%s}", (int)getpid(),
             dumpable ? "true" : "false");
    Buf b = {0};
    buf_add(&b, text, strlen(text));
    send_frame(&b);
}

static void reply_exec(long long id, int rc, int timed_out, const char *error) {
    char head[128];
    snprintf(head, sizeof head, "{\"id\":%lld,\"rc\":%d,\"timed_out\":%s,\"error\":", id, rc,
             timed_out ? "true" : "false");
    Buf b = {0};
    buf_add(&b, head, strlen(head));
    json_str(&b, error);
    buf_add(&b, "}", 1);
    send_frame(&b);
}

/* ---- requests ----------------------------------------------------------------------------- */

typedef struct {
    long long id;
    char *cwd;
    double timeout_s; /* < 0: none */
    double grace_s;
    int nfds;
    char **argv;
    char **env;
    int nrl;
    long long *rl; /* pairs: resource, value */
    char *payload;
} Req;

static void req_free(Req *r) {
    free(r->argv);
    free(r->env);
    free(r->rl);
    free(r->payload);
}

/* The counted list at f[*i]: its count, then that many strings. A NULL-terminated array of them, or
 * NULL when the count is missing, below `min` or runs past the `count` fields. */
static char **take_list(char **f, size_t count, size_t *i, long min) {
    if (*i >= count) return NULL;
    long m = atol(f[(*i)++]);
    if (m < min || (size_t)m > count - *i) return NULL;
    char **out = calloc((size_t)m + 1, sizeof *out);
    if (!out) return NULL;
    for (long j = 0; j < m; j++) out[j] = f[(*i)++];
    return out;
}

/* Parse a request payload; 0 on success. The fields point into `payload`, which `r` takes over. */
static int parse_req(char *payload, size_t n, Req *r) {
    memset(r, 0, sizeof *r);
    r->payload = payload;
    if (n == 0 || payload[n - 1] != '\0') return -1;
    size_t count = 0;
    for (size_t i = 0; i < n; i++) count += payload[i] == '\0';
    char **f = calloc(count + 1, sizeof *f);
    if (!f) return -1;
    size_t k = 0;
    for (char *p = payload; p < payload + n; p += strlen(p) + 1) f[k++] = p;
    size_t i = 0;
#define NEXT() (i < count ? f[i++] : NULL)
    char *op = NEXT(), *id = NEXT(), *cwd = NEXT(), *timeout = NEXT(), *grace = NEXT(), *nfds = NEXT();
    if (!nfds || strcmp(op, "exec") != 0) goto bad;
    r->id = strtoll(id, NULL, 10);
    r->cwd = cwd;
    r->timeout_s = *timeout ? strtod(timeout, NULL) : -1.0;
    r->grace_s = strtod(grace, NULL);
    r->nfds = atoi(nfds);
    if (!(r->argv = take_list(f, count, &i, 1)) || !(r->env = take_list(f, count, &i, 0))) goto bad;
    char *nrl = NEXT();
    if (!nrl) goto bad;
    r->nrl = atoi(nrl);
    if (r->nrl < 0 || (size_t)r->nrl * 2 > count - i) goto bad;
    r->rl = calloc((size_t)r->nrl * 2 + 1, sizeof(long long));
    for (int j = 0; j < 2 * r->nrl; j++) {
        char *v = NEXT();
        r->rl[j] = v ? strtoll(v, NULL, 10) : 0;
    }
#undef NEXT
    free(f);
    return 0;
bad:
    free(f);
    return -1;
}

/* ---- the command -------------------------------------------------------------------------- */

static const char *err_name(int e) {
    switch (e) {
    case ENOENT: return "FileNotFoundError";
    case EACCES:
    case EPERM: return "PermissionError";
    case ENOTDIR: return "NotADirectoryError";
    case EISDIR: return "IsADirectoryError";
    default: return "OSError";
    }
}

static void fail_child(int errw, int e, const char *what) {
    char msg[ERR_MAX + 128];
    int n = snprintf(msg, sizeof msg, "%s: [Errno %d] %s: '%s'", err_name(e), e, strerror(e), what);
    if (n > 0) write_all(errw, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
    _exit(127);
}

/* execvpe with PATH taken from the command's own environment (as os.execvpe does). */
static void exec_search(int errw, char **argv, char **env) {
    const char *file = argv[0];
    if (strchr(file, '/')) {
        execve(file, argv, env);
        fail_child(errw, errno, file);
    }
    const char *path = "/bin:/usr/bin";
    for (char **p = env; *p; p++)
        if (strncmp(*p, "PATH=", 5) == 0) path = *p + 5;
    int saved = 0, last = ENOENT;
    char saved_name[4096] = "", last_name[4096] = "";
    const char *dir = path;
    for (;;) {
        const char *end = strchr(dir, ':');
        size_t dlen = end ? (size_t)(end - dir) : strlen(dir);
        char full[4096];
        if (dlen == 0)
            snprintf(full, sizeof full, "%s", file);
        else
            snprintf(full, sizeof full, "%.*s/%s", (int)dlen, dir, file);
        execve(full, argv, env);
        last = errno;
        snprintf(last_name, sizeof last_name, "%s", full);
        if (last != ENOENT && last != ENOTDIR && saved == 0) {
            saved = last;
            snprintf(saved_name, sizeof saved_name, "%s", full);
        }
        if (!end) break;
        dir = end + 1;
    }
    if (saved) fail_child(errw, saved, saved_name);
    fail_child(errw, last, last_name);
}

static void exec_child(Req *r, int *fds, int nfds, int errw) {
    setsid();
    for (int j = 0; j < r->nrl; j++) {
        struct rlimit rl = {(rlim_t)r->rl[2 * j + 1], (rlim_t)r->rl[2 * j + 1]};
        if (setrlimit((int)r->rl[2 * j], &rl) != 0) fail_child(errw, errno, "setrlimit");
    }
    int sources[MAX_FDS + 1], high[MAX_FDS + 1];
    sources[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (sources[0] < 0) fail_child(errw, errno, "/dev/null");
    for (int j = 0; j < nfds; j++) sources[j + 1] = fds[j];
    for (int j = 0; j <= nfds; j++) {
        high[j] = fcntl(sources[j], F_DUPFD_CLOEXEC, 64);
        if (high[j] < 0) fail_child(errw, errno, "fcntl");
    }
    for (int j = 0; j <= nfds; j++)
        if (dup2(high[j], j) < 0) fail_child(errw, errno, "dup2");
    if (chdir(r->cwd) != 0) fail_child(errw, errno, r->cwd);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    exec_search(errw, r->argv, r->env);
}

/* ---- the agent ---------------------------------------------------------------------------- */

typedef struct {
    int socks[2];
    Buf bufs[2]; /* bufs[i]: bytes waiting to be written to socks[i] */
    int eof[2];  /* eof[i]: socks[i] has sent EOF */
    int shut[2]; /* shut[i]: write side of socks[i] is shut down */
} Pipe;

static struct {
    const char *sock_path;
    int reap_all;
    int fd_sock;
    int listener;
    Pipe **pipes;
    size_t npipes, cappipes;
    Buf inbuf;
    int stdin_open;
    int child; /* 0: none */
    pid_t pid;
    int pidfd;
    long long id;
    double deadline; /* < 0: none */
    double grace;
    double killed_at; /* < 0: not yet; INFINITY: SIGKILL sent */
    int timed_out;
} A;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void signal_group(pid_t pgid, int sig) { killpg(pgid, sig); }

static int receive_fds(int n, int *fds) {
    char data[64];
    if (n < 0) n = 0;
    if (n > MAX_FDS) n = MAX_FDS;
    size_t space = CMSG_SPACE(sizeof(int) * (size_t)(n ? n : 1));
    char *control = calloc(1, space);
    struct iovec iov = {data, sizeof data};
    struct msghdr msg = {0};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = CMSG_LEN(sizeof(int) * (size_t)n);
    int got = 0;
    if (recvmsg(A.fd_sock, &msg, MSG_CMSG_CLOEXEC) >= 0) {
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
            size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t j = 0; j < k; j++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + j * sizeof(int), sizeof fd);
                if (got < MAX_FDS)
                    fds[got++] = fd;
                else
                    close(fd);
            }
        }
    }
    free(control);
    return got;
}

static void start(Req *r) {
    int fds[MAX_FDS];
    int n = receive_fds(r->nfds, fds);
    if (A.child || n < 2) {
        for (int j = 0; j < n; j++) close(fds[j]);
        reply_exec(r->id, -1, 0, A.child ? "busy" : "output descriptors missing");
        return;
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        for (int j = 0; j < n; j++) close(fds[j]);
        reply_exec(r->id, 127, 0, "OSError: pipe2 failed");
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        exec_child(r, fds, n, p[1]);
    }
    close(p[1]);
    for (int j = 0; j < n; j++) close(fds[j]);
    if (pid < 0) {
        close(p[0]);
        char msg[128];
        snprintf(msg, sizeof msg, "%s: [Errno %d] %s", err_name(errno), errno, strerror(errno));
        reply_exec(r->id, 127, 0, msg);
        return;
    }
    char err[ERR_MAX + 1];
    size_t got = 0;
    for (;;) {
        ssize_t k = read(p[0], err + got, ERR_MAX - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
        if (got == ERR_MAX) break;
    }
    err[got] = '\0';
    close(p[0]);
    if (got > 0) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        reply_exec(r->id, 127, 0, err);
        return;
    }
    A.child = 1;
    A.pid = pid;
    A.pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    A.id = r->id;
    A.deadline = r->timeout_s > 0 ? now() + r->timeout_s : -1.0; /* 0 or none: no limit */
    A.grace = r->grace_s;
    A.killed_at = -1.0;
    A.timed_out = 0;
}

static void on_stdin(void) {
    char data[65536];
    ssize_t k = read(0, data, sizeof data);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (k <= 0) {
        A.stdin_open = 0;
        return;
    }
    buf_add(&A.inbuf, data, (size_t)k);
    while (A.inbuf.len >= 4) {
        uint32_t n;
        memcpy(&n, A.inbuf.data, 4);
        n = ntohl(n);
        if (n > MAX_FRAME) _exit(2);
        if (A.inbuf.len < 4 + (size_t)n) break;
        char *payload = malloc(n ? n : 1);
        if (!payload) _exit(3);
        memcpy(payload, A.inbuf.data + 4, n);
        buf_drop(&A.inbuf, 4 + (size_t)n);
        Req r;
        if (parse_req(payload, n, &r) != 0) _exit(2); /* the host never sends that */
        start(&r);
        req_free(&r);
    }
}

/* Every other process of the namespace SIGKILLed in one call, then reaped (at most REAP_WAIT_S), so
 * none still runs when the reply goes out. kill(-1) spares only the caller (pid 1) and signals the
 * others under the lock fork takes: a chain of forks cannot slip past it as it could past a /proc
 * listing. Only as pid 1 of a namespace: elsewhere kill(-1) would reach every process of the uid. */
static void kill_others(void) {
    if (getpid() != 1 || kill(-1, SIGKILL) != 0) return; /* ESRCH: nobody else */
    double deadline = now() + REAP_WAIT_S;
    for (;;) {
        pid_t pid = waitpid(-1, NULL, WNOHANG);
        if (pid < 0) return; /* ECHILD: nobody left */
        if (pid == 0) {
            if (now() > deadline) return;
            usleep(500);
        }
    }
}

static void on_child_exit(int status) {
    close(A.pidfd);
    signal_group(A.pid, SIGKILL); /* anything left in its group */
    if (A.reap_all) kill_others();
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? -WTERMSIG(status) : 255;
    A.child = 0;
    reply_exec(A.id, rc, A.timed_out, "");
}

static void reap(void) {
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0) return;
        if (A.child && pid == A.pid) on_child_exit(status);
    }
}

static void tick_child(double t) {
    if (!A.child) return;
    if (A.deadline >= 0 && t >= A.deadline && A.killed_at < 0) {
        A.timed_out = 1;
        A.killed_at = t;
        signal_group(A.pid, SIGTERM);
    } else if (A.killed_at >= 0 && !isinf(A.killed_at) && t >= A.killed_at + A.grace) {
        signal_group(A.pid, SIGKILL);
        A.killed_at = INFINITY;
    }
}

static void on_accept(void) {
    int fd = accept4(A.listener, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) return;
    int up = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un addr = {0};
    addr.sun_family = AF_UNIX;
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", A.sock_path);
    if (up < 0 || connect(up, (struct sockaddr *)&addr, sizeof addr) != 0) {
        if (up >= 0) close(up);
        close(fd);
        return;
    }
    Pipe *p = calloc(1, sizeof *p);
    p->socks[0] = fd;
    p->socks[1] = up;
    for (int i = 0; i < 2; i++) fcntl(p->socks[i], F_SETFL, fcntl(p->socks[i], F_GETFL) | O_NONBLOCK);
    if (A.npipes == A.cappipes) {
        A.cappipes = A.cappipes ? A.cappipes * 2 : 16;
        A.pipes = realloc(A.pipes, A.cappipes * sizeof *A.pipes);
        if (!A.pipes) _exit(3);
    }
    A.pipes[A.npipes++] = p;
}

/* Move bytes for one bridged connection; `rev[i]`/`wev[i]`: socks[i] is readable/writable. */
static void pump(Pipe *p, const int *rev, const int *wev) {
    char data[65536];
    for (int i = 0; i < 2; i++) {
        int j = 1 - i;
        if (rev[i] && !p->eof[i]) {
            ssize_t k = recv(p->socks[i], data, sizeof data, 0);
            if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
                p->eof[i] = 1;
            else if (k > 0)
                buf_add(&p->bufs[j], data, (size_t)k);
        }
    }
    for (int j = 0; j < 2; j++) {
        if (p->bufs[j].len && wev[j]) {
            ssize_t k = send(p->socks[j], p->bufs[j].data, p->bufs[j].len, MSG_NOSIGNAL);
            if (k > 0)
                buf_drop(&p->bufs[j], (size_t)k);
            else if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                p->bufs[j].len = 0;
                p->eof[0] = p->eof[1] = 1;
            }
        }
        if (p->eof[1 - j] && !p->bufs[j].len && !p->shut[j]) {
            p->shut[j] = 1;
            shutdown(p->socks[j], SHUT_WR);
        }
    }
}

static void run(void) {
    struct pollfd *pfd = NULL;
    size_t cap = 0;
    while (A.stdin_open || A.child) {
        size_t need = 3 + 2 * A.npipes, n = 0;
        if (need > cap) {
            cap = need * 2;
            pfd = realloc(pfd, cap * sizeof *pfd);
            if (!pfd) _exit(3);
        }
        int i_stdin = -1, i_listen = -1;
        if (A.stdin_open) {
            i_stdin = (int)n;
            pfd[n++] = (struct pollfd){0, POLLIN, 0};
        }
        if (A.listener >= 0) {
            i_listen = (int)n;
            pfd[n++] = (struct pollfd){A.listener, POLLIN, 0};
        }
        if (A.child) pfd[n++] = (struct pollfd){A.pidfd, POLLIN, 0}; /* wakes the loop: reap() below */
        size_t first_pipe = n;
        for (size_t k = 0; k < A.npipes; k++) {
            Pipe *p = A.pipes[k];
            for (int i = 0; i < 2; i++) {
                short ev = 0;
                if (!p->eof[i] && p->bufs[1 - i].len < BUF_LIMIT) ev |= POLLIN;
                if (p->bufs[i].len) ev |= POLLOUT;
                pfd[n++] = (struct pollfd){ev ? p->socks[i] : -1, ev, 0};
            }
        }
        int ready = poll(pfd, n, 50);
        if (ready < 0 && errno != EINTR) _exit(3);
        if (ready < 0)
            for (size_t k = 0; k < n; k++) pfd[k].revents = 0;
        if (i_stdin >= 0 && pfd[i_stdin].revents) {
            on_stdin();
            if (!A.stdin_open && A.child) signal_group(A.pid, SIGKILL);
        }
        size_t npipes = A.npipes; /* connections accepted below are polled next time */
        if (i_listen >= 0 && pfd[i_listen].revents & POLLIN) on_accept();
        for (size_t k = 0; k < npipes; k++) {
            int rev[2], wev[2];
            for (int i = 0; i < 2; i++) {
                short re = pfd[first_pipe + 2 * k + (size_t)i].revents;
                rev[i] = (re & (POLLIN | POLLHUP | POLLERR)) != 0;
                wev[i] = (re & (POLLOUT | POLLERR)) != 0;
            }
            pump(A.pipes[k], rev, wev);
        }
        size_t kept = 0;
        for (size_t k = 0; k < A.npipes; k++) {
            Pipe *p = A.pipes[k];
            if (p->shut[0] && p->shut[1]) {
                close(p->socks[0]);
                close(p->socks[1]);
                free(p->bufs[0].data);
                free(p->bufs[1].data);
                free(p);
            } else {
                A.pipes[kept++] = p;
            }
        }
        A.npipes = kept;
        reap();
        tick_child(now());
    }
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: agent LISTEN_PORT SOCK_PATH REAP_ALL FD_SOCKET\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    int dumpable = prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0;
    int port = atoi(argv[1]);
    A.sock_path = argv[2];
    A.reap_all = strcmp(argv[3], "1") == 0;
    A.fd_sock = atoi(argv[4]);
    fcntl(A.fd_sock, F_SETFD, FD_CLOEXEC);
    A.listener = -1;
    A.stdin_open = 1;
    if (port > 0) {
        A.listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        int one = 1;
        setsockopt(A.listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        struct sockaddr_in addr = {0};
        addr.sin_family = AF_INET;
        addr.sin_port = htons((uint16_t)port);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (bind(A.listener, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(A.listener, 128) != 0) {
            perror("agent: listening on the endpoint port");
            return 2;
        }
    }
    reply_hello(dumpable);
    run();
    return 0;
}
