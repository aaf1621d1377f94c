package heuristics

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// ruleSnap is one process (pid 200, forked from 100 when forked is set)
// whose thread 200 has the given stack, blocked on a futex.
func ruleSnap(forked bool, modules []string, cmdline []string, frames ...string) *stacks.Snapshot {
	p := nbModules(nbProc(200, nbThread(200, "worker", nbTimes(3, nbBlocked("futex", nbFrames(frames...)))...)), modules...)
	if cmdline != nil {
		p.Cmdline = cmdline
	}
	if forked {
		nbForked(p, 100, []int{100, 101}, modules...)
	}
	return nbSnap(true, p)
}

// withLockArg gives the frames named fn of every sample of the snapshot's
// threads the argument name=value, as gdb prints one, and drops the
// threads' waits' syscalls: a pasted dump names its lock only so.
func withLockArg(snap *stacks.Snapshot, fn, name, value string) *stacks.Snapshot {
	for _, p := range snap.Processes {
		for _, t := range p.Threads {
			stacksOf := [][]stacks.Frame{t.Stack}
			for i := range t.Samples() {
				stacksOf = append(stacksOf, t.Samples()[i].Stack)
			}
			for _, st := range stacksOf {
				for i := range st {
					if st[i].Func == fn {
						st[i].Args = []stacks.Arg{stacks.NewArg(name, value)}
					}
				}
			}
		}
	}
	return snap
}

// refined applies the built-in rules to one base diagnosis naming
// thread 200 of pid 200, and returns it.
func refined(snap *stacks.Snapshot, base string, rules ...Rule) Diagnosis {
	if rules == nil {
		rules = builtinRules()
	}
	d := Diagnosis{ID: base, Pids: []int{200}, Tids: []int{200}, Summary: "base summary", Fix: "base fix", Refs: []string{"https://example.org/base"}, Deadlock: true}
	return refine(newAnalysis(snap), []Diagnosis{d}, rules)[0]
}

func TestBuiltinRulesMatchTheRealBugs(t *testing.T) {
	cuda := []string{libc, libcuda}
	python := []string{"/usr/bin/python3", "train.py"}
	cases := []struct {
		rule, base string
		hit, miss  *stacks.Snapshot
		missBase   string // the base of the near miss, when not base
	}{
		{"openblas-fork-relock", "self-deadlock",
			ruleSnap(true, nil, nil, "__lll_lock_wait", "pthread_mutex_lock", "blas_thread_init", "exec_blas_async", "exec_blas", "dgetrf_parallel", "dgetrf_", "main"),
			ruleSnap(true, nil, nil, "sched_yield", "exec_blas_async_wait", "exec_blas", "dgemv_thread_n", "main"), ""},
		{"openblas-fork-relock", "fork-inherited-lock",
			ruleSnap(true, nil, nil, "__lll_lock_wait", "pthread_mutex_lock", "blas_thread_init", "exec_blas_async", "main"),
			ruleSnap(true, nil, nil, "__lll_lock_wait", "pthread_mutex_lock", "blas_thread_init", "exec_blas_async", "main"), "lock-order-cycle"},
		{"tt-metal-devicepool-fork", "fork-inherited-lock",
			ruleSnap(true, nil, nil, "__lll_lock_wait", "pthread_mutex_lock", "tt::tt_metal::DevicePool::open_device(int)", "ttnn::open_device", "main"),
			ruleSnap(true, nil, nil, "__lll_lock_wait", "pthread_mutex_lock", "Allocator::allocate", "main"), ""},
		{"mlx-fence-fast-synch", "spin-wait-starved",
			ruleSnap(false, nil, nil, "mlx::core::Fence::wait(mlx::core::Stream, mlx::core::array const&)", "mlx::core::eval_impl", "main"),
			ruleSnap(false, nil, nil, "spin_until_ready", "main"), ""},
		{"torch-inductor-compile-worker-fork", "fork-after-accelerator-init",
			ruleSnap(true, cuda, []string{"/usr/bin/python3", "-m", "torch._inductor.compile_worker", "--workers=8"}, "futex_wait", "cuInit", "main"),
			ruleSnap(true, cuda, python, "futex_wait", "cuInit", "main"), ""},
		{"cuda-forked-subprocess", "fork-after-accelerator-init",
			ruleSnap(true, cuda, python, "futex_wait", "cuInit", "main"),
			ruleSnap(true, []string{libc, "/opt/rocm/lib/libamdhip64.so.6"}, python, "futex_wait", "hipInit", "main"), ""},
		{"jemalloc-fork", "fork-inherited-lock",
			ruleSnap(true, nil, nil, "__lll_lock_wait", "pthread_mutex_lock", "je_malloc_mutex_lock_slow", "je_extent_alloc", "je_arena_tcache_fill_small", "calloc", "main"),
			ruleSnap(false, nil, nil, "__lll_lock_wait", "pthread_mutex_lock", "je_malloc_mutex_lock_slow", "je_extent_alloc", "calloc", "main"), ""},
		{"glibc-malloc-fork", "fork-inherited-lock",
			ruleSnap(true, nil, nil, "__lll_lock_wait_private", "arena_get2", "tcache_init", "__GI___libc_malloc", "strdup", "main"),
			ruleSnap(true, nil, nil, "__lll_lock_wait", "pthread_mutex_lock", "pool_alloc", "main"), ""},
		{"dl-load-lock-fork", "fork-inherited-lock",
			ruleSnap(true, nil, nil, "__lll_lock_wait", "pthread_mutex_lock", "_dl_open", "dlopen_doit", "_dl_catch_exception", "dlopen", "load_plugin", "main"),
			ruleSnap(true, nil, nil, "__lll_lock_wait", "pthread_mutex_lock", "load_plugin", "main"), ""},
		{"torch-dataloader-worker-fork", "fork-inherited-lock",
			ruleSnap(true, nil, nil, "lock_PyThread_acquire_lock", "Queue.put", "_worker_loop", "BaseProcess.run", "BaseProcess._bootstrap", "Popen._launch"),
			ruleSnap(true, nil, nil, "lock_PyThread_acquire_lock", "Queue.put", "worker_loop", "BaseProcess.run", "BaseProcess._bootstrap", "Popen._launch"), ""},
		{"python-logging-fork", "fork-inherited-lock",
			ruleSnap(true, nil, nil, "lock_PyThread_acquire_lock", "logging.StreamHandler.acquire", "logging.Handler.handle", "logging.Logger.info", "worker"),
			ruleSnap(true, nil, nil, "lock_PyThread_acquire_lock", "threading.Lock.acquire", "mymodule.worker"), ""},
		{"python-buffered-io-fork", "fork-inherited-lock",
			ruleSnap(false, nil, nil, "do_futex_wait", "__new_sem_wait_slow", "PyThread_acquire_lock_timed", "PyThread_acquire_lock", "_enter_buffered_busy", "_io__Buffered_flush", "main"),
			ruleSnap(false, nil, nil, "do_futex_wait", "__new_sem_wait_slow", "PyThread_acquire_lock_timed", "PyThread_acquire_lock", "local_clear", "main"), ""},
		{"grpc-fork", "fork-inherited-lock",
			ruleSnap(true, nil, nil, "__lll_lock_wait", "pthread_mutex_lock", "gpr_mu_lock", "grpc_core::ExecCtx::Flush()", "main"),
			ruleSnap(false, nil, nil, "__lll_lock_wait", "pthread_mutex_lock", "gpr_mu_lock", "grpc_core::ExecCtx::Flush()", "main"), ""},
		// a paste's lock, named by the lock frame's argument only
		{"appscope-internal-libc-fork", "fork-inherited-lock",
			withLockArg(ruleSnap(true, nil, nil, "__syscall4", "__futexwait", "__lock", "rdlock", "__libc_malloc_impl", "cJSON_New_Item", "periodic"), "__futexwait", "addr", "0x7fface63d728 <scopelibc___malloc_lock>"),
			withLockArg(ruleSnap(true, nil, nil, "__syscall4", "__futexwait", "__lock", "rdlock", "__libc_malloc_impl", "cJSON_New_Item", "periodic"), "__futexwait", "addr", "0x7fface63d728 <__malloc_lock>"), ""},
		{"pybind11-gil-scoped-acquire-held", "self-deadlock",
			ruleSnap(false, nil, nil, "__psynch_cvwait", "_pthread_cond_wait", "take_gil", "PyEval_AcquireThread", "pybind11::gil_scoped_acquire::gil_scoped_acquire", "main"),
			ruleSnap(false, nil, nil, "__psynch_cvwait", "_pthread_cond_wait", "take_gil", "PyEval_RestoreThread", "time_sleep", "main"), ""},
	}
	covered := map[string]bool{}
	for _, c := range cases {
		d := refined(c.hit, c.base)
		if d.KnownIssue == nil || d.KnownIssue.ID != c.rule {
			t.Errorf("%s on %s: known issue %+v", c.rule, c.base, d.KnownIssue)
			continue
		}
		covered[c.rule] = true
		if d.ID != c.base {
			t.Errorf("%s: base id became %s", c.rule, d.ID)
		}
		missBase := c.base
		if c.missBase != "" {
			missBase = c.missBase
		}
		if m := refined(c.miss, missBase); m.KnownIssue != nil && m.KnownIssue.ID == c.rule {
			t.Errorf("%s: the near miss on %s matched too", c.rule, missBase)
		}
	}
	for _, r := range builtinRules() {
		if !covered[r.ID] {
			t.Errorf("built-in rule %s has no test", r.ID)
		}
	}
}

func TestRefineKeepsBaseAndGivesTheFix(t *testing.T) {
	snap := ruleSnap(true, nil, nil, "__lll_lock_wait", "pthread_mutex_lock", "blas_thread_init", "exec_blas_async", "exec_blas", "dgemm_", "main")
	d := refined(snap, "self-deadlock")
	if d.ID != "self-deadlock" || d.KnownIssue == nil {
		t.Fatalf("got %+v", d)
	}
	if !strings.Contains(d.Fix, "0.3.31") || !strings.Contains(d.Fix, "OPENBLAS_NUM_THREADS=1") || d.KnownIssue.Fix != d.Fix {
		t.Errorf("fix %q", d.Fix)
	}
	for _, l := range []string{"https://example.org/base", "https://github.com/OpenMathLib/OpenBLAS/pull/5170", "https://github.com/OpenMathLib/OpenBLAS/pull/5556", "https://github.com/numpy/numpy/issues/30092", "https://github.com/scipy/scipy/issues/23686"} {
		if !containsString(d.Refs, l) {
			t.Errorf("refs lack %s: %v", l, d.Refs)
		}
	}
	if !strings.HasPrefix(d.Summary, "base summary") || !strings.Contains(d.Summary, "known issue `openblas-fork-relock`") {
		t.Errorf("summary %q", d.Summary)
	}
	if ev := strings.Join(d.Evidence, "\n"); !strings.Contains(ev, "`blas_thread_init$`") || !strings.Contains(ev, "thread 200 `worker`") {
		t.Errorf("evidence %q", ev)
	}

	keep := Rule{ID: "keep", Base: []string{"self-deadlock"}, Frames: []string{"dgemm_"}, Title: "t", Fix: "other fix", KeepFix: true}
	if d := refined(snap, "self-deadlock", keep); d.Fix != "base fix" || d.KnownIssue == nil || d.KnownIssue.Fix != "other fix" {
		t.Errorf("keep_fix: fix %q, known issue %+v", d.Fix, d.KnownIssue)
	}
}

func TestRefineOrderAndOverride(t *testing.T) {
	snap := ruleSnap(true, nil, nil, "__lll_lock_wait", "pthread_mutex_lock", "blas_thread_init", "exec_blas_async", "main")
	a := Rule{ID: "first", Base: []string{"self-deadlock"}, Frames: []string{"exec_blas"}, Title: "first", Fix: "f1"}
	b := Rule{ID: "second", Base: []string{"self-deadlock"}, Frames: []string{"main"}, Title: "second", Fix: "f2"}
	if d := refined(snap, "self-deadlock", a, b); d.KnownIssue.ID != "first" {
		t.Errorf("first match should win, got %s", d.KnownIssue.ID)
	}
	// A user rule with a built-in's id replaces it.
	over := Rule{ID: "openblas-fork-relock", Base: []string{"self-deadlock"}, Frames: []string{"exec_blas_async"}, Title: "ours", Fix: "our fix"}
	if d := refined(snap, "self-deadlock", append(builtinRules(), over)...); d.KnownIssue.Title != "ours" || d.Fix != "our fix" {
		t.Errorf("override: %+v", d.KnownIssue)
	}
	// A diagnosis a matcher refined already is left alone.
	d := Diagnosis{ID: "self-deadlock", Pids: []int{200}, Tids: []int{200}, KnownIssue: &KnownIssue{ID: "matcher"}}
	if got := refine(newAnalysis(snap), []Diagnosis{d}, builtinRules())[0]; got.KnownIssue.ID != "matcher" {
		t.Errorf("pre-set known issue replaced by %s", got.KnownIssue.ID)
	}
}

func TestRuleConditions(t *testing.T) {
	snap := ruleSnap(true, []string{libc, "/opt/lib/libopenblas.so.0"}, []string{"python3", "solve.py", "--fast"}, "futex_wait", "solve", "main")
	snap.Processes[0].Threads[0].Samples()[2].Wait.Mutex = &stacks.Mutex{Addr: 1, Owner: 101, Symbol: "server_lock"}
	for _, c := range []struct {
		r    Rule
		want bool
	}{
		{Rule{Modules: []string{"libopenblas"}}, true},
		{Rule{Modules: []string{"libmkl"}}, false},
		{Rule{Cmdline: []string{`solve\.py`, `--fast`}}, true},
		{Rule{Cmdline: []string{`train\.py`}}, false},
		{Rule{AnyFrames: []string{"^solve$", "^main$"}}, true},
		{Rule{AnyFrames: []string{"^solve$", "^absent$"}}, false},
		{Rule{Locks: []string{"^server_lock$"}}, true},
		{Rule{Locks: []string{"^_dl_load_lock$"}}, false},
		{Rule{Frames: []string{"solve"}, Forked: true}, true},
		{Rule{Frames: []string{"solve", "absent"}}, false},
	} {
		c.r.ID, c.r.Base, c.r.Title, c.r.Fix = "r", []string{"self-deadlock"}, "t", "f"
		if _, err := c.r.validate(); err != nil {
			t.Fatal(err)
		}
		d := refined(snap, "self-deadlock", c.r)
		if (d.KnownIssue != nil) != c.want {
			t.Errorf("%+v: matched %v, want %v", c.r, d.KnownIssue != nil, c.want)
		}
	}
	// forked on a process that is not a child.
	snap.Processes[0].Fork = nil
	r := Rule{ID: "r", Base: []string{"self-deadlock"}, Frames: []string{"solve"}, Forked: true, Title: "t", Fix: "f"}
	if d := refined(snap, "self-deadlock", r); d.KnownIssue != nil {
		t.Error("forked matched a process that is not a forked child")
	}
}

func TestBuiltinRulesAreValid(t *testing.T) {
	rs := BuiltinRules()
	if len(rs) < 10 {
		t.Fatalf("%d built-in rules", len(rs))
	}
	for _, r := range rs {
		for _, b := range r.Base {
			if Lookup(b) == nil {
				t.Errorf("%s: base %s is not in the catalogue", r.ID, b)
			}
		}
		if len(r.Links) == 0 || r.Explain == "" || r.Source != "built-in" {
			t.Errorf("%s: links %v, explain %d bytes, source %q", r.ID, r.Links, len(r.Explain), r.Source)
		}
	}
}

func TestLoadRulesErrors(t *testing.T) {
	ok := `"id": "x", "base": ["self-deadlock"], "frames": ["f"], "title": "t", "fix": "f"`
	for _, c := range []struct{ in, want string }{
		{`{"rules": [{` + ok + `}, {"id": "openblas-fork", "base": ["self-deadlock"], "frames": ["("], "title": "t", "fix": "f"}]}`,
			"rule 1 (openblas-fork): frames[0]: bad regexp `(`: missing closing )"},
		{`{"rules": [{"id": "y", "base": ["self-deadlock", "no-such-id"], "frames": ["f"], "title": "t", "fix": "f"}]}`,
			`rule 0 (y): base[1]: unknown signature id "no-such-id" (hangdoc signatures lists them)`},
		{`{"rules": [{` + ok + `, "frame": ["g"]}]}`, `rule 0 (x): unknown field "frame"`},
		{`{"rules": [{"id": "x", "base": "self-deadlock", "title": "t", "fix": "f"}]}`, "rule 0 (x): base: want []string, got a JSON string"},
		{`{"rules": [{"id": "x", "base": ["self-deadlock"], "title": "t", "fix": "f"}]}`, "rule 0 (x): no condition: give frames, any_frames, modules, cmdline or locks"},
		{`{"rules": [{"id": "x", "base": ["self-deadlock"], "frames": ["f"], "fix": "f"}]}`, "rule 0 (x): title: missing"},
		{`{"rules": [{"id": "x", "base": ["self-deadlock"], "frames": ["f"], "title": "t"}]}`, "rule 0 (x): fix: missing"},
		{`{"rules": [{"base": ["self-deadlock"], "frames": ["f"], "title": "t", "fix": "f"}]}`, "rule 0: id: missing"},
		{`{"rules": [{"id": "Bad Id", "base": ["self-deadlock"], "frames": ["f"], "title": "t", "fix": "f"}]}`, `rule 0 (Bad Id): id: "Bad Id": want lower-case letters, digits, '.', '_' and '-'`},
		{`{"rules": [{` + ok + `}, {` + ok + `}]}`, "rule 1 (x): id: duplicate of rule 0"},
		{`{"rules": [{` + ok + `, "links": ["github.com/x/y/issues/1"]}]}`, `rule 0 (x): links[0]: "github.com/x/y/issues/1" is not an http(s) URL`},
		{`{"rules": [{` + ok + `, "modules": ["lib(a"]}]}`, "rule 0 (x): modules[0]: bad regexp `lib(a`: missing closing )"},
		{"{\"rules\": [\n  {\"id\": \"x\",}\n]}", "line 2, column 14: invalid character '}' looking for beginning of object key string"},
		{`{"rule": []}`, `unknown field "rule"`},
		{`{}`, `no "rules" list: want {"rules": [...]}`},
		{``, "empty or truncated JSON"},
	} {
		_, err := LoadRules(strings.NewReader(c.in))
		if err == nil || err.Error() != c.want {
			t.Errorf("LoadRules(%s):\n got %v\nwant %s", c.in, err, c.want)
		}
		var re *RuleError
		if err != nil && !errors.As(err, &re) {
			t.Errorf("%v is not a *RuleError", err)
		}
	}
}

func TestLoadRulesFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.json")
	os.WriteFile(path, []byte(`{"rules": [{"id": "openblas-fork", "base": ["self-deadlock"], "frames": ["("], "title": "t", "fix": "f"}]}`), 0o644)
	_, err := LoadRulesFile(path)
	if want := path + ": rule 0 (openblas-fork): frames[0]: bad regexp `(`: missing closing )"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	os.WriteFile(path, []byte(`{"rules": [{"id": "mine", "base": ["progressing"], "frames": ["^mix_leaf$"], "title": "our slow hash", "fix": "use the fast one", "links": ["https://example.org/1"]}]}`), 0o644)
	rs, err := LoadRulesFile(path)
	if err != nil || len(rs) != 1 || rs[0].Source != path {
		t.Fatalf("%v %+v", err, rs)
	}
	// A user's rule refines a verdict that is not a deadlock, through
	// Diagnose.
	ds := Diagnose(busySnap(), Options{Rules: rs}).Diagnoses
	p := nbFind(ds, "progressing")
	if len(p) != 1 || p[0].KnownIssue == nil || p[0].KnownIssue.ID != "mine" || p[0].Fix != "use the fast one" {
		t.Errorf("got %+v", p)
	}
	if _, err := LoadRulesFile(filepath.Join(dir, "absent.json")); err == nil {
		t.Error("a missing file loaded")
	}
}
