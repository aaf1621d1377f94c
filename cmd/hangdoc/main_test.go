package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/stacks"
)

// run executes hangdoc's command tree in-process with buffers for output.
func run(args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	ios := &ioStreams{out: &out, errOut: &errOut}
	root := newRootCmd(ios)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errOut.String(), err
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"attach"},
		{"attach", "abc"},
		{"attach", "-5"},
		{"attach", "--format", "xml", "1"},
		{"attach", "--samples", "0", "1"},
		{"attach", "--color", "sometimes", "1"},
		{"attach", "--no-such-flag", "1"},
	} {
		_, _, err := run(args...)
		var ue usageError
		if !errors.As(err, &ue) || strings.Contains(err.Error(), "\n") {
			t.Errorf("hangdoc %s: got %v, want a usage error", strings.Join(args, " "), err)
		}
	}
}

func TestVersion(t *testing.T) {
	out, _, err := run("version")
	if err != nil || !strings.HasPrefix(out, "hangdoc ") || strings.HasPrefix(out, "hangdoc dev ") {
		t.Fatalf("version: %q, %v", out, err)
	}
	flag, _, err := run("--version")
	if err != nil || flag != out {
		t.Fatalf("--version: %q, %v; want what version prints, %q", flag, err, out)
	}
}

func TestAttachJSON(t *testing.T) {
	patient.RequirePtrace(t)
	p := patient.Start(t, patient.Build(t, "mutex_o2.c", patient.O2...))
	out, _, err := run("attach", "--samples", "2", "--interval", "10ms", "--format", "json", strconv.Itoa(p.Pid))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		stacks.Snapshot
		Diagnoses []json.RawMessage `json:"diagnoses"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if doc.Schema != "hangdoc/v1" || doc.Diagnoses == nil || len(doc.Processes) != 1 {
		t.Fatalf("schema %q, diagnoses %v, %d processes", doc.Schema, doc.Diagnoses, len(doc.Processes))
	}
	proc := doc.Processes[0]
	if proc.Pid != p.Pid || len(proc.Threads) != 5 {
		t.Fatalf("pid %d with %d threads, want %d with 5", proc.Pid, len(proc.Threads), p.Pid)
	}
	for _, th := range proc.Threads {
		if len(th.Stack) < 3 || len(th.Samples()) != 2 || th.Wait == nil || th.Wait.Syscall != "futex" {
			t.Errorf("thread %d: %d frames, %d samples, wait %+v", th.Tid, len(th.Stack), len(th.Samples()), th.Wait)
		}
	}
}

func TestAttachTextIsPlainWhenPiped(t *testing.T) {
	patient.RequirePtrace(t)
	p := patient.Start(t, patient.Build(t, "mutex_o2.c", patient.O2...))
	out, _, err := run("attach", "--samples", "1", strconv.Itoa(p.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "\x1b") {
		t.Fatalf("escape sequences in piped output:\n%q", out)
	}
	for _, want := range []string{"pid " + strconv.Itoa(p.Pid), "5 threads", "pthread_mutex_lock", "dog_fetch", "futex FUTEX_WAIT_PRIVATE"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	colored, _, err := run("attach", "--samples", "1", "--color", "always", strconv.Itoa(p.Pid))
	if err != nil || !strings.Contains(colored, "\x1b[") {
		t.Fatalf("--color always gave no color: %v", err)
	}
}

func TestAttachNoSuchProcess(t *testing.T) {
	_, _, err := run("attach", "99999999")
	if err == nil || !strings.Contains(err.Error(), "no such process") {
		t.Fatalf("got %v", err)
	}
}

// TestAttachGoThreads: a Go program is shown goroutine by goroutine;
// --threads adds its OS threads after them, in text and markdown.
func TestAttachGoThreads(t *testing.T) {
	patient.RequirePtrace(t)
	p := patient.StartGo(t, patient.BuildGo(t, "abba"))
	pid := strconv.Itoa(p.Pid)
	plain, _, _ := run("attach", "--samples", "1", pid)
	if !strings.Contains(plain, "goroutines in") || strings.Contains(plain, "OS thread") {
		t.Fatalf("without --threads: want goroutines and no OS threads:\n%s", plain)
	}
	tasks, err := p.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"text", "markdown"} {
		out, _, _ := run("attach", "--samples", "1", "--threads", "--format", format, pid)
		want := fmt.Sprintf("program's %d OS threads in", len(tasks))
		if !strings.Contains(strings.ToLower(out), strings.ToLower(want)) || !strings.Contains(out, "runtime.") {
			t.Errorf("%s with --threads: no %q (the %d OS threads /proc lists):\n%s", format, want, len(tasks), out)
		}
	}
}
