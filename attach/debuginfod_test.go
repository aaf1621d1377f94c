package attach_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/stacks"
)

// TestDebuginfod serves the debug file of a stripped patient from a real
// debuginfod (elfutils', started here on 127.0.0.1 over a directory
// holding only that file): the attach names the patient's functions from
// it and caches it, and a later attach with the server gone names them
// from the cache. With the server down the attach costs no more than
// without DEBUGINFOD_URLS: a refused connection at once, a server that
// accepts and never answers once (the answer timeout), then not again.
func TestDebuginfod(t *testing.T) {
	patient.RequirePtrace(t)
	server := patient.RequireTool(t, "debuginfod")
	objcopy := patient.RequireTool(t, "objcopy")
	full := patient.Build(t, "mutex_o2.c", patient.O2g...)
	stripped := patient.Strip(t, full)

	srv := t.TempDir()
	if out, err := exec.Command(objcopy, "--only-keep-debug", full, filepath.Join(srv, "mutex_o2.debug")).CombinedOutput(); err != nil {
		t.Fatalf("objcopy --only-keep-debug: %v\n%s", err, out)
	}
	id := buildIDOf(t, stripped)
	port := patient.FreePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	cmd := exec.Command(server, "-F", "-p", fmt.Sprint(port), "-d", filepath.Join(t.TempDir(), "db.sqlite"), "-t", "0", "-g", "0", srv)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting debuginfod: %v", err)
	}
	stopServer := func() {
		if cmd.Process != nil && cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}
	t.Cleanup(stopServer)
	waitServed(t, url+"/buildid/"+id+"/debuginfo", &log)

	// Each attach runs its own copy of the binary: parsed files are
	// cached by inode across attaches. The baseline is the same attach
	// with no server named (libc and the loader parsed once before).
	t.Setenv("DEBUGINFOD_URLS", "")
	attachCopy(t, stripped, attach.DebuginfodOptions{})
	_, base := attachCopy(t, stripped, attach.DebuginfodOptions{})
	slack := 500 * time.Millisecond

	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("DEBUGINFOD_URLS", url)
	var progress strings.Builder
	snap, took := attachCopy(t, stripped, attach.DebuginfodOptions{Progress: &progress})
	proc := snap.Processes[0]
	if !strings.Contains(progress.String(), "fetching the debug file of mutex_o2 from "+url) {
		t.Errorf("progress lines %q: want one saying what is fetched from where", progress.String())
	}
	checkMutex(true)(t, nil, proc)
	if findNote(proc.Notes, "(debuginfod)") == "" {
		t.Errorf("no note says a debug file came from debuginfod: %q", proc.Notes)
	}
	cached := filepath.Join(os.Getenv("XDG_CACHE_HOME"), "hangdoc", "debuginfod", id, "debuginfo")
	if _, err := os.Stat(cached); err != nil {
		t.Errorf("fetched debug file not cached: %v", err)
	}
	t.Logf("attach with a fetch from the local server: %v (%v without a server)", took, base)

	// A core of the stripped patient, read with an empty cache: its
	// modules are loaded through the same path, so the debug file is
	// fetched for it too.
	if _, err := exec.LookPath("gdb"); err == nil {
		cp := copyBinary(t, stripped)
		p := patient.Start(t, cp)
		corePath := patient.Gcore(t, p.Pid, t.TempDir())
		p.Kill(t)
		t.Setenv("XDG_CACHE_HOME", t.TempDir())
		csnap, err := attach.Core(corePath, attach.CoreOptions{})
		if err != nil {
			t.Fatalf("Core: %v", err)
		}
		// A core has no thread names: the patient's functions are
		// looked for on any stack.
		var all []string
		for _, th := range csnap.Processes[0].Threads {
			all = append(all, names(th.Stack)...)
		}
		for _, fn := range []string{"ant_bite", "bee_sting", "cat_pounce", "dog_fetch", "main"} {
			if indexOf(all, fn) < 0 {
				t.Errorf("core: %s not named on any stack: %q", fn, all)
			}
		}
		if findNote(csnap.Processes[0].Notes, "(debuginfod)") == "" {
			t.Errorf("core: no note says a debug file came from debuginfod: %q", csnap.Processes[0].Notes)
		}
	} else {
		patient.Missing(t, "gdb (gcore) not installed: the core case is not tested")
	}

	stopServer()
	snap, _ = attachCopy(t, stripped, attach.DebuginfodOptions{})
	checkMutex(true)(t, nil, snap.Processes[0])

	// Off: the cache is not used either.
	snap, _ = attachCopy(t, stripped, attach.DebuginfodOptions{Off: true})
	checkMutex(false)(t, nil, snap.Processes[0])

	// The server down; each case gets a fresh cache, so nothing is
	// known of the server yet.
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("DEBUGINFOD_URLS", url) // refused: nothing listens there now
	snap, refused := attachCopy(t, stripped, attach.DebuginfodOptions{})
	checkMutex(false)(t, nil, snap.Processes[0])
	if findNote(snap.Processes[0].Notes, "debuginfod server "+url) == "" {
		t.Errorf("no note says the server failed: %q", snap.Processes[0].Notes)
	}
	if refused > base+slack {
		t.Errorf("server refusing connections: attach took %v, %v without a server", refused, base)
	}

	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("DEBUGINFOD_URLS", "http://"+silent.Addr().String())
	_, first := attachCopy(t, stripped, attach.DebuginfodOptions{})
	_, again := attachCopy(t, stripped, attach.DebuginfodOptions{})
	if first > base+2*time.Second+slack {
		t.Errorf("silent server: first attach took %v, want at most one answer timeout (2s) more than %v", first, base)
	}
	if again > base+slack {
		t.Errorf("silent server: the next attach took %v, %v without a server: the server was asked again", again, base)
	}
	t.Logf("attach: %v without a server, %v with the server refusing, %v then %v with a silent server", base, refused, first, again)
}

// attachCopy runs a copy of bin and attaches to it once, timing the
// attach.
func attachCopy(t *testing.T, bin string, d attach.DebuginfodOptions) (*stacks.Snapshot, time.Duration) {
	t.Helper()
	p := patient.Start(t, copyBinary(t, bin))
	start := time.Now()
	snap, err := attach.Attach(context.Background(), []int{p.Pid}, attach.Options{Samples: 1, Debuginfod: d})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	p.Kill(t)
	return snap, took
}

// copyBinary copies bin to a new file (a new inode: parsed files are
// cached by inode) in a temporary directory.
func copyBinary(t *testing.T, bin string) string {
	t.Helper()
	cp := filepath.Join(t.TempDir(), "mutex_o2")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cp, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return cp
}

// buildIDOf reads a file's GNU build id with readelf.
func buildIDOf(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command(patient.RequireTool(t, "readelf"), "-n", path).Output()
	if err != nil {
		t.Fatalf("readelf -n %s: %v", path, err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if _, id, ok := strings.Cut(l, "Build ID: "); ok {
			return strings.TrimSpace(id)
		}
	}
	t.Fatalf("%s has no build id", path)
	return ""
}

// waitServed polls until the server serves url (it scans its directory
// after it starts).
func waitServed(t *testing.T, url string, log *strings.Builder) {
	t.Helper()
	end := time.Now().Add(60 * time.Second)
	for time.Now().Before(end) {
		resp, err := http.Get(url)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("debuginfod did not serve %s within 60s; its output:\n%s", url, log.String())
}
