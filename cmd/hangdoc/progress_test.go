package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/internal/patient"
)

func TestProgressSilentWhenNotATerminal(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf)
	p.delay = 0
	p.update(1, 3, 201, 4)
	p.clear()
	if buf.Len() != 0 {
		t.Fatalf("wrote %q to a buffer", buf.String())
	}
	// A file that is not a terminal is silent too.
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p = newProgress(f)
	p.delay = 0
	p.update(1, 3, 201, 4)
	p.clear()
	if fi, _ := f.Stat(); fi.Size() != 0 {
		t.Fatalf("wrote %d bytes to a file", fi.Size())
	}
}

func TestProgressLine(t *testing.T) {
	var buf bytes.Buffer
	p := &progress{w: &buf, on: true, start: time.Now()}
	p.update(2, 3, 201, 4)
	if got, want := buf.String(), "\rsample 2/3 · 201 threads · 4 processes"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	// A shorter line covers the longer one before it.
	buf.Reset()
	p.update(3, 3, 1, 1)
	line := "sample 3/3 · 1 thread · 1 process"
	long := len([]rune("sample 2/3 · 201 threads · 4 processes"))
	if got, want := buf.String(), "\r"+line+strings.Repeat(" ", long-len([]rune(line))); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	// clear leaves the cursor at the start of an empty line.
	buf.Reset()
	p.clear()
	if got, want := buf.String(), "\r"+strings.Repeat(" ", long)+"\r"; got != want {
		t.Fatalf("clear wrote %q, want %q", got, want)
	}
	buf.Reset()
	p.clear()
	if buf.Len() != 0 {
		t.Fatalf("a second clear wrote %q", buf.String())
	}
}

// A quick attach shows nothing: the line waits for the delay.
func TestProgressWaitsForDelay(t *testing.T) {
	var buf bytes.Buffer
	p := &progress{w: &buf, on: true, start: time.Now(), delay: time.Hour}
	p.update(1, 3, 5, 1)
	p.clear()
	if buf.Len() != 0 {
		t.Fatalf("wrote %q before the delay", buf.String())
	}
}

// attach.Options.Progress is called after every sample with what was
// read so far.
func TestAttachCallsProgress(t *testing.T) {
	patient.RequirePtrace(t)
	p := patient.Start(t, patient.Build(t, "sleeper.c", patient.O2g...))
	var calls [][4]int
	_, err := attach.Attach(context.Background(), []int{p.Pid}, attach.Options{
		Samples: 3, Interval: 10 * time.Millisecond,
		Progress: func(sample, samples, threads, processes int) {
			calls = append(calls, [4]int{sample, samples, threads, processes})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := [][4]int{{1, 3, 2, 1}, {2, 3, 2, 1}, {3, 3, 2, 1}}
	if len(calls) != len(want) {
		t.Fatalf("Progress calls %v, want %v", calls, want)
	}
	for i := range want {
		if calls[i] != want[i] {
			t.Fatalf("Progress calls %v, want %v", calls, want)
		}
	}
}
