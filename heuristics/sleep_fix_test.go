package heuristics

import (
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// Every thread of the process sleeps and none runs: the fix names what
// would have woken them. A barrier's is its missing party, a semaphore's
// its missing post; a condvar (or a mix) keeps the predicate fix.
func TestLostWakeupFixByObject(t *testing.T) {
	cases := []struct {
		name, want string
		frames     [][]string
	}{
		{"barrier", "pthread_barrier_init", [][]string{
			{"futex_wait", "futex_wait_simple", "pthread_barrier_wait", "main"},
			{"futex_wait", "futex_wait_simple", "pthread_barrier_wait", "worker", "start_thread"}}},
		{"semaphore", "sem_post", [][]string{
			{"__futex_abstimed_wait_common", "__new_sem_wait_slow64.constprop.0", "worker", "start_thread"},
			{"__futex_abstimed_wait_common", "__new_sem_wait_slow64.constprop.0", "other", "start_thread"}}},
		{"condvar", "predicate", [][]string{
			{"futex_wait", "__futex_abstimed_wait_common", "pthread_cond_wait", "consumer", "start_thread"},
			{"futex_wait", "futex_wait_simple", "pthread_barrier_wait", "worker", "start_thread"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := proc(300)
			for i, fr := range c.frames {
				p.Threads = append(p.Threads, thread(300+i, "t", fr...))
			}
			d, ok := top(live(p))
			if !ok || d.ID != "lost-wakeup" {
				t.Fatalf("top %q (%s), want lost-wakeup", d.ID, d.Summary)
			}
			if !strings.Contains(d.Fix, c.want) {
				t.Errorf("fix %q does not say %q", d.Fix, c.want)
			}
		})
	}
}

// A join from the exit path (a static destructor under exit's handlers)
// of a worker still waiting for work: the fix says to stop the workers
// before joining; the same join from main keeps the generic fix.
func TestLostWakeupExitPathJoin(t *testing.T) {
	worker := func() *stacks.Thread {
		return thread(401, "worker", "futex_wait", "__pthread_cond_wait_common", "pthread_cond_wait", "std::condition_variable::wait", "Pool::run", "start_thread")
	}
	for _, c := range []struct {
		name   string
		joiner []string
		exit   bool
	}{
		{"from a static destructor", []string{"__futex_abstimed_wait_common", "__pthread_clockjoin_ex", "std::thread::join", "Pool::~Pool", "__run_exit_handlers", "exit", "__libc_start_call_main"}, true},
		{"from main", []string{"__futex_abstimed_wait_common", "__pthread_clockjoin_ex", "std::thread::join", "main", "__libc_start_call_main"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := thread(400, "main", c.joiner...)
			j.Wait = &stacks.Wait{Syscall: "futex", JoinTid: 401}
			for i := range j.Samples() {
				j.Samples()[i].Wait = j.Wait
			}
			d, ok := top(live(proc(400, j, worker())))
			if !ok || d.ID != "lost-wakeup" {
				t.Fatalf("top %q (%s), want lost-wakeup", d.ID, d.Summary)
			}
			if got := strings.Contains(d.Fix, "exit path"); got != c.exit {
				t.Errorf("fix %q: says exit path %v, want %v", d.Fix, got, c.exit)
			}
		})
	}
}
