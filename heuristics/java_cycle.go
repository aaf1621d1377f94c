package heuristics

import (
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

// A cycle of Java threads (their lock waits: javaRuntimeFacts) is a
// lock-order cycle told in Java's words: monitors and
// java.util.concurrent locks, Lock.tryLock, not pthread mutexes
// (matchLockOrderCycle).

// javaLockOrderRefs are lockOrderRefs for a cycle of Java threads: their
// locks are monitors and java.util.concurrent locks, not pthread mutexes.
var javaLockOrderRefs = []string{
	"https://docs.oracle.com/javase/tutorial/essential/concurrency/deadlock.html",
	"https://docs.oracle.com/en/java/javase/17/docs/api/java.base/java/util/concurrent/locks/Lock.html#tryLock(long,java.util.concurrent.TimeUnit)",
}

// javaCycle says every thread of the cycle is a JVM's Java thread: its
// stack is Java code, or (a stackless thread a deadlock report names)
// its process's other threads are.
func javaCycle(c []Edge) bool {
	for _, e := range c {
		if !javaThread(e.From.Thread) && !javaProcess(e.From.Proc) {
			return false
		}
	}
	return len(c) > 0
}

// javaThread: the thread's Java facts say so (stacks.KindJava); a
// hangdoc/v1 document keeps none, and its Java threads have .java files.
func javaThread(t *stacks.Thread) bool {
	if t.Runtime != nil && t.Runtime.Kind == stacks.KindJava {
		return true
	}
	for _, f := range t.Stack {
		if strings.HasSuffix(f.File, ".java") {
			return true
		}
	}
	return false
}

func javaProcess(p *stacks.Process) bool {
	if p == nil {
		return false
	}
	for _, t := range p.Threads {
		if javaThread(t) {
			return true
		}
	}
	return false
}
