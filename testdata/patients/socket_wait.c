/*
 * socket_wait: a control that does not hang in a lock. Thread
 * "net-reader" waits in recv() on a connected loopback TCP socket whose
 * peer (the accepted end, which main keeps open) never writes. main waits
 * in pthread_join. The right verdict is "io-wait", naming the fd (a
 * socket, peer 127.0.0.1:<port>); there is no deadlock claim to make.
 *
 * Prints "reader=<tid>", "fd=<the socket the reader waits on>" and
 * "port=<the peer's port>" before "ready", which comes once the reader
 * sleeps in recvfrom.
 *
 * Expected stack of net-reader (innermost first):
 *   recv (recvfrom syscall) ← read_request ← reader_main ← start_thread
 */
#include "patient.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

static _Atomic pid_t reader_tid;
static int client_fd;
static volatile int sink;

static PATIENT_NOINLINE ssize_t read_request(int fd)
{
	char buf[512];
	ssize_t n = recv(fd, buf, sizeof buf, 0); /* the peer never writes */
	sink += (int)n;
	return n;
}

static PATIENT_NOINLINE void *reader_main(void *arg)
{
	(void)arg;
	reader_tid = patient_gettid();
	ssize_t n = read_request(client_fd);
	sink += (int)n;
	return NULL;
}

int main(void)
{
	struct sockaddr_in addr;
	socklen_t len = sizeof addr;
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0)
		patient_die("socket");
	memset(&addr, 0, sizeof addr);
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	addr.sin_port = 0;
	if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) != 0)
		patient_die("bind");
	if (listen(lfd, 1) != 0)
		patient_die("listen");
	if (getsockname(lfd, (struct sockaddr *)&addr, &len) != 0)
		patient_die("getsockname");
	client_fd = socket(AF_INET, SOCK_STREAM, 0);
	if (client_fd < 0)
		patient_die("socket");
	if (connect(client_fd, (struct sockaddr *)&addr, sizeof addr) != 0)
		patient_die("connect");
	int peer_fd = accept(lfd, NULL, NULL); /* kept open, never written */
	if (peer_fd < 0)
		patient_die("accept");
	close(lfd);

	pthread_t reader;
	errno = pthread_create(&reader, NULL, reader_main, NULL);
	if (errno != 0)
		patient_die("pthread_create");
	pthread_setname_np(reader, "net-reader");
	struct timespec ms = {0, 1000000};
	pid_t tid;
	while ((tid = reader_tid) == 0)
		nanosleep(&ms, NULL);
	int nr = PATIENT_SYS_RECVFROM;
	patient_wait_blocked(&tid, &nr, 1);
	patient_sayf("reader=%d\n", (int)tid);
	patient_sayf("fd=%d\n", client_fd);
	patient_sayf("port=%d\n", (int)ntohs(addr.sin_port));
	patient_ready();
	pthread_join(reader, NULL); /* for ever */
	sink += peer_fd;
	return 0;
}
