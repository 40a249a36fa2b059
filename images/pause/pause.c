/* The pod sandbox's first process: holds the pod's namespaces open, reaps the
 * zombies of processes that share its PID namespace, and exits on SIGINT/SIGTERM.
 * Built statically (gcc -static) so the image is this one file and nothing else. */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) { (void)sig; _exit(0); }

static void reap(int sig)
{
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

static void on(int sig, void (*handler)(int))
{
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = handler;
    action.sa_flags = SA_RESTART;
    sigaction(sig, &action, NULL);
}

int main(void)
{
    on(SIGINT, stop);
    on(SIGTERM, stop);
    on(SIGCHLD, reap);
    for (;;)
        pause();
}
